#!/bin/sh
# Hidden check for fix-python-script: one line per input, PASS when both figures are right.
check() {
  name=$1; input=$2; expected=$3
  out=$(printf "$input" | python3 /work/stats.py 2>/dev/null)
  [ "$out" = "$(printf "$expected")" ] && echo "PASS $name" || echo "FAIL $name"
}
check "odd count" '3\n1\n2\n' 'mean: 2.00\nmedian: 2.00'
check "even count" '4\n1\n3\n2\n' 'mean: 2.50\nmedian: 2.50'
check "fractions" '1.5\n\n2.25\n' 'mean: 1.88\nmedian: 1.88'
check "single" '7\n' 'mean: 7.00\nmedian: 7.00'
