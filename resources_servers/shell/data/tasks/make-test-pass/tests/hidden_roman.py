# Runs the agent's to_roman in a child process so nothing it prints can pose as a result line.
import subprocess
import sys

CASES = {1: 'I', 14: 'XIV', 90: 'XC', 400: 'CD', 944: 'CMXLIV', 2024: 'MMXXIV', 3999: 'MMMCMXCIX'}
program = 'import json, sys; sys.path.insert(0, "/work"); from roman import to_roman; print(json.dumps({n: to_roman(n) for n in %r}))' % list(CASES)
try:
    out = subprocess.run([sys.executable, '-c', program], capture_output=True, text=True, timeout=20).stdout.strip().splitlines()
    import json
    got = json.loads(out[-1]) if out else {}
except Exception:
    got = {}
ok = all(got.get(str(n)) == numeral for n, numeral in CASES.items())
print('PASS hidden values' if ok else 'FAIL hidden values')
