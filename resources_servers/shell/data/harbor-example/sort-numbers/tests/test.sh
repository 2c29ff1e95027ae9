#!/bin/bash
if [ "$(cat /app/sorted.txt 2>/dev/null)" = "$(sort -n /app/numbers.txt)" ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
