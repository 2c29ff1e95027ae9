#!/bin/bash
cd /app || exit 1
passed=0
[ "$(cat out/greeting.txt 2>/dev/null)" = "Hello from $EXPECTED_TEAM" ] && passed=$((passed + 1))
[ "$(tail -n 1 data/team.conf)" = "status=ready" ] && passed=$((passed + 1))
python3 -c "print(1.0 if $passed == 2 else 0.0)" > /logs/verifier/reward.txt
