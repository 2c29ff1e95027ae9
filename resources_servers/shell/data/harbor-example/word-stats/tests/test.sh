#!/bin/bash
# reward.json: the reward, and details that end up as the rollout's extras.
python3 - <<'PY'
import collections, json, re
text = open('/data/text.txt').read()
expected_count = len(text.split())
expected_top = collections.Counter(re.findall(r"[a-z]+", text.lower())).most_common(1)[0][0]
def read(path):
    try:
        return open(path).read().strip()
    except OSError:
        return None
count_ok = read('/data/count.txt') == str(expected_count)
top_ok = read('/data/top.txt') == expected_top
json.dump({'reward': (count_ok + top_ok) / 2, 'count_ok': count_ok, 'top_ok': top_ok,
           'expected_count': expected_count}, open('/logs/verifier/reward.json', 'w'))
PY
