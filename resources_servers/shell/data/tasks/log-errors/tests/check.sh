#!/bin/sh
# Hidden check for log-errors: the exact expected lines.
cd /work || exit 1
[ -f errors.txt ] && echo "PASS errors.txt exists" || echo "FAIL errors.txt exists"
if [ "$(sed 's/[[:space:]]*$//' errors.txt 2>/dev/null | sed '/^$/d')" = "$(cat /check/expected.txt)" ]; then
  echo "PASS counts and order"
else
  echo "FAIL counts and order"
fi
