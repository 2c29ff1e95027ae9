#!/bin/sh
# Hidden check for find-file-by-content.
cd /work || exit 1
[ -f answer.txt ] && echo "PASS answer.txt exists" || echo "FAIL answer.txt exists"
[ "$(cat answer.txt 2>/dev/null | sed 's#^\./##')" = "archive/2022/07/summary.txt" ] && echo "PASS the right file" || echo "FAIL the right file"
