#!/bin/bash
wc -w < /data/text.txt | tr -d ' ' > /data/count.txt
tr 'A-Z' 'a-z' < /data/text.txt | grep -oE '[a-z]+' | sort | uniq -c | sort -rn | head -n 1 | awk '{print $2}' > /data/top.txt
