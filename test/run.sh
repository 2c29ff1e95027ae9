#!/usr/bin/env bash
# The project's test command (`npm test`, and what .ci/run calls): provision the machine programs the tests drive for
# real, build, then run every test. The tests start real programs — Redis for the distributed queue, Debian's
# Chromium for the viewer's browser tests, bubblewrap for the shell environment's sandbox, python3 for the Python
# servers — so a missing one is installed here when this shell can (root with
# apt-get), and otherwise named in one line with the command that installs it, before anything runs.
set -euo pipefail
cd "$(dirname "$0")/.."

# program on PATH (or absolute path) -> Debian package that provides it
declare -A NEEDS=([python3]=python3 [redis-server]=redis-server [/usr/bin/chromium]=chromium [bwrap]=bubblewrap)
missing=()
for program in "${!NEEDS[@]}"; do
  if [[ $program == /* ]]; then [ -x "$program" ] || missing+=("${NEEDS[$program]}"); else command -v "$program" >/dev/null || missing+=("${NEEDS[$program]}"); fi
done
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "npm test: installing ${missing[*]} (Debian packages the tests drive)…"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "npm test: the tests need these Debian packages, which this machine lacks: ${missing[*]}. Install them (sudo apt-get install -y ${missing[*]}) and run npm test again." >&2
    exit 1
  fi
fi

npx tsc -p tsconfig.json
# The compiled twin of every test source (a test file deleted or moved leaves a stale twin in dist/, which must not run).
mapfile -t tests < <(find src resources_servers responses_api_agents examples bench test -name '*.test.ts' | sort | sed -e 's#^#dist/#' -e 's#\.ts$#.js#')
node --test --test-concurrency=2 "${tests[@]}"
# The remote agent's tests once more with their environments reached in-process, as a co-located agent reaches its
# environment (D23, test/support/remote-agent.ts): every assertion must hold on both paths.
TSGYM_TEST_ENV_IN_PROCESS=1 exec node --test --test-concurrency=2 dist/responses_api_agents/remote_agent/*.test.js
