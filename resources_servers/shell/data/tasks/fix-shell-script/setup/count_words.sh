#!/bin/sh
# Usage: count_words.sh FILE...
# Prints "<file>: <words>" for each file, then "total: <sum>".
total=0
for f in "$1"; do
  n=$(wc -w < $f)
  echo "$f: $n"
  total=$((total + n))
done
echo "total: $total"
