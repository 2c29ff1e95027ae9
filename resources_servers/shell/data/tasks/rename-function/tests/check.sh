#!/bin/sh
# Hidden check for rename-function.
cd /work || exit 1
if grep -rnw --include='*.py' fetch_data src >/dev/null 2>&1; then echo "FAIL no fetch_data left in src"; else echo "PASS no fetch_data left in src"; fi
[ "$(grep -rhow --include='*.py' load_data src | wc -l)" -eq 6 ] && echo "PASS every use renamed" || echo "FAIL every use renamed"
[ "$(grep -rhow --include='*.py' fetch_data_cached src | wc -l)" -eq 3 ] && echo "PASS fetch_data_cached kept" || echo "FAIL fetch_data_cached kept"
cmp -s notes/history.txt /check/history.expected && echo "PASS notes untouched" || echo "FAIL notes untouched"
[ "$(cd src && python3 main.py sales 2>/dev/null)" = "$(printf 'sales: 3 rows\n3 3')" ] && echo "PASS the program still runs" || echo "FAIL the program still runs"
