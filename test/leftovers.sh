#!/usr/bin/env bash
# What a test run left behind (called by test/run.sh once every test has finished, with TMPDIR unset so that this
# script's own processes are not mistaken for leftovers): the files in the run's temp dir, and the processes that still
# carry TMPDIR=<that dir> in their environment (a server a test started and never stopped). Names each, stops the
# processes (TERM, then KILL after 5 s) so they do not outlive the run, and exits 1 if there was anything.
set -uo pipefail
run_tmp=$1
found=0

# tsx-<uid> is tsx's compile cache, shared by every process of the run on purpose (not a test's leftover); it goes
# with the run's temp dir.
files=$(find "$run_tmp" -mindepth 1 -maxdepth 1 -not -path "$run_tmp/tsx-[0-9]*" 2>/dev/null | sort | head -n 200)
if [ -n "$files" ]; then
  found=1
  echo "npm test: the tests left these in the temp dir (a test must remove what it makes, in an after hook, on failure too):" >&2
  echo "$files" | sed 's/^/  /' >&2
fi

leftover_pids=()
for environ in /proc/[0-9]*/environ; do
  pid=${environ#/proc/}
  pid=${pid%/environ}
  [ "$pid" = "$PPID" ] && continue
  # A process may end between the listing and the read: its environ is then gone, which is not an error.
  if { tr '\0' '\n' <"$environ"; } 2>/dev/null | grep -qxF "TMPDIR=$run_tmp"; then leftover_pids+=("$pid"); fi
done
if [ "${#leftover_pids[@]}" -gt 0 ]; then
  found=1
  echo "npm test: these processes outlived the tests that started them (a test must stop what it starts, in an after hook):" >&2
  for pid in "${leftover_pids[@]}"; do
    echo "  $pid: $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-200)" >&2
  done
  kill -TERM "${leftover_pids[@]}" 2>/dev/null
  for _ in $(seq 50); do
    alive=0
    for pid in "${leftover_pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && break
    sleep 0.1
  done
  kill -KILL "${leftover_pids[@]}" 2>/dev/null
fi

if [ "$found" = 0 ]; then echo "npm test: nothing left behind (temp dir empty, no stray process)"; fi
exit "$found"
