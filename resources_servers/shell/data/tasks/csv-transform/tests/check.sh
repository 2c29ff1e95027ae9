#!/bin/sh
# Hidden check for csv-transform: header, the set of rows, the figures, the order.
cd /work || exit 1
header=$(head -n 1 summary.csv 2>/dev/null | tr -d '\r')
[ "$header" = "region,revenue" ] && echo "PASS header" || echo "FAIL header"
body=$(tail -n +2 summary.csv 2>/dev/null | tr -d '\r' | sed '/^$/d')
[ "$(printf '%s\n' "$body" | cut -d, -f1 | sort | tr '\n' ' ')" = "east north south west " ] && echo "PASS one row per region" || echo "FAIL one row per region"
[ "$(printf '%s\n' "$body" | sort | tr '\n' ' ')" = "east,64.97 north,54.99 south,45.00 west,49.98 " ] && echo "PASS revenues" || echo "FAIL revenues"
[ "$(printf '%s\n' "$body" | cut -d, -f1 | tr '\n' ' ')" = "east north west south " ] && echo "PASS sorted by revenue" || echo "FAIL sorted by revenue"
