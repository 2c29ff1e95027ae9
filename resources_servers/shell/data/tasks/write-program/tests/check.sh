#!/bin/sh
# Hidden check for write-program: encode, decode and a round trip on inputs the agent has not seen.
cd /work || exit 1
enc() { printf '%s\n' "$1" | python3 rle.py encode 2>/dev/null; }
dec() { printf '%s\n' "$1" | python3 rle.py decode 2>/dev/null; }
[ "$(enc aaab)" = "a3b1" ] && echo "PASS encode aaab" || echo "FAIL encode aaab"
[ "$(enc 'zzzzzzzzzzzz  y')" = "z12 2y1" ] && echo "PASS encode a long run and spaces" || echo "FAIL encode a long run and spaces"
[ "$(dec x1y10)" = "xyyyyyyyyyy" ] && echo "PASS decode a two-digit count" || echo "FAIL decode a two-digit count"
[ "$(printf 'abc' | python3 rle.py encode 2>/dev/null)" = "a1b1c1" ] && echo "PASS encode without a final newline" || echo "FAIL encode without a final newline"
text='hello,,,  world!!'
[ "$(dec "$(enc "$text")")" = "$text" ] && echo "PASS round trip" || echo "FAIL round trip"
