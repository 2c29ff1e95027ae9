#!/bin/sh
# Hidden check for fix-shell-script: run the agent's script on files it has never seen.
cd /tmp || exit 1
printf 'one two three\n' > 'a file.txt'
printf 'four five\nsix\n' > b.txt
printf '' > empty.txt
out=$(sh /work/count_words.sh 'a file.txt' b.txt empty.txt 2>/dev/null)
expected=$(printf 'a file.txt: 3\nb.txt: 3\nempty.txt: 0\ntotal: 6')
[ "$out" = "$expected" ] && echo "PASS three files, one with a space" || echo "FAIL three files, one with a space"
out=$(sh /work/count_words.sh b.txt 2>/dev/null)
[ "$out" = "$(printf 'b.txt: 3\ntotal: 3')" ] && echo "PASS one file" || echo "FAIL one file"
