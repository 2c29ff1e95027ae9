#!/usr/bin/env bash
# The project's test command (`npm test`, and what .ci/run calls): provision the machine programs the tests drive for
# real, build, then run every test. The tests start real programs — Redis for the distributed queue, Debian's
# Chromium for the viewer's browser tests, bubblewrap for the shell environment's sandbox, python3 for the Python
# servers, Debian's python3-scipy to check the statistics against, iproute2 for the multi-host test's network
# namespaces, Prometheus to scrape the servers' /metrics — so a missing one is installed here when this shell can
# (root with apt-get), and otherwise named in one line with the command that installs it, before anything runs.
set -euo pipefail
cd "$(dirname "$0")/.."

# program on PATH (or absolute path) -> Debian package that provides it
declare -A NEEDS=([python3]=python3 [redis-server]=redis-server [prometheus]=prometheus [/usr/bin/chromium]=chromium [bwrap]=bubblewrap [ip]=iproute2 [/usr/lib/python3/dist-packages/scipy]=python3-scipy)
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

# The local-model brain's runtime (examples/local-llm): node-llama-cpp is an optional peer dependency, so npm ci
# leaves it out. It is added here with this machine's CPU build only (a plain install also pulls every GPU build,
# ~730 MB), staged in its own directory under node_modules/.cache and linked in: the project's tree, package.json
# and lock stay as npm ci made them (installing in place with --omit=optional would remove the project's own
# optional platform packages, esbuild's among them). Skipped when present; when the registry is out of reach, its
# tests skip, saying why.
LLAMA_VERSION=3.21.1
LLAMA_PLATFORM="$(node -p 'process.platform + "-" + process.arch')"
LLAMA_STAGE=".cache/tsgym-node-llama-cpp-$LLAMA_VERSION"
if [[ $LLAMA_PLATFORM == linux-x64 || $LLAMA_PLATFORM == linux-arm64 ]] &&
  [ "$(node -p "try { require('./node_modules/node-llama-cpp/package.json').version } catch { '' }")" != "$LLAMA_VERSION" ]; then
  echo "npm test: installing node-llama-cpp@$LLAMA_VERSION (CPU build for $LLAMA_PLATFORM) for the local-model brain's tests…"
  mkdir -p "node_modules/$LLAMA_STAGE"
  echo '{"private": true}' >"node_modules/$LLAMA_STAGE/package.json"
  if npm install --prefix "node_modules/$LLAMA_STAGE" --no-save --omit=optional --no-audit --no-fund --loglevel=error \
    "node-llama-cpp@$LLAMA_VERSION" "@node-llama-cpp/$LLAMA_PLATFORM@$LLAMA_VERSION"; then
    rm -rf node_modules/node-llama-cpp
    ln -s "$LLAMA_STAGE/node_modules/node-llama-cpp" node_modules/node-llama-cpp
  else
    echo "npm test: node-llama-cpp could not be installed; the local-model brain's tests will skip." >&2
  fi
fi

npx tsc -p tsconfig.json

# Every test's temporary files and processes belong to this run: TMPDIR is a directory of its own, which every child
# inherits (os.tmpdir(), mkdtemp, Python's tempfile, Redis and Chromium alike). After the run it must be empty and no
# process may still carry it, or the suite fails naming what was left (test/leftovers.sh). Another suite running beside
# this one has its own directory, so neither is blamed for the other. Mode 0755: the shell sandbox's per-session users
# pass through the temp dir to reach their work dirs.
RUN_TMP="$(mktemp -d "${TMPDIR:-/tmp}/tsgym-run-XXXXXX")"
chmod 0755 "$RUN_TMP"
trap 'rm -rf "$RUN_TMP"' EXIT
export TMPDIR="$RUN_TMP"
echo "npm test: temp dir of this run: $RUN_TMP"

# The compiled twin of every test source (a test file deleted or moved leaves a stale twin in dist/, which must not run).
mapfile -t tests < <(find src resources_servers responses_api_agents responses_api_models examples bench test -name '*.test.ts' | sort | sed -e 's#^#dist/#' -e 's#\.ts$#.js#')
status=0
node --test --test-concurrency=2 "${tests[@]}" || status=$?
# The remote agent's tests and its engine's (src/rollout/) once more with their environments reached in-process, as a
# co-located agent reaches its environment (D23, test/support/remote-agent.ts): every assertion must hold on both paths.
TSGYM_TEST_ENV_IN_PROCESS=1 node --test --test-concurrency=2 dist/responses_api_agents/remote_agent/*.test.js dist/src/rollout/*.test.js || status=$?
# The shell environment without root (resources_servers/shell/sandbox/rootless.ts): its sandbox and Harbor tests once
# more as an unprivileged user, whose sessions are held in namespaces instead of uids — the same escape, fork-bomb and
# limit tests must pass both ways. The checkout may lie under a private (0700) directory that user cannot enter, so
# the user sees it through a bind mount in a mount namespace of this step's own.
if [ "$(id -u)" = 0 ]; then
  id -u tsgym-test >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin tsgym-test
  user_id="$(id -u tsgym-test)"
  group_id="$(id -g tsgym-test)"
  mkdir "$RUN_TMP/rootless" "$RUN_TMP/checkout"
  chown "$user_id:$group_id" "$RUN_TMP/rootless"
  unshare --mount --propagation private -- sh -c 'mount --bind "$1" "$2" && cd "$2" && shift 2 && exec "$@"' sh \
    "$PWD" "$RUN_TMP/checkout" setpriv --reuid="$user_id" --regid="$group_id" --clear-groups \
    env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$RUN_TMP/rootless" TMPDIR="$RUN_TMP/rootless" TSGYM_TEST_REQUIRE_SANDBOX=1 \
    "$(command -v node)" --test --test-concurrency=1 dist/resources_servers/shell/sandbox/sandbox.test.js \
    dist/resources_servers/shell/harbor/harbor.test.js || status=$?
  rmdir "$RUN_TMP/rootless" "$RUN_TMP/checkout" || status=1
fi
env -u TMPDIR bash test/leftovers.sh "$RUN_TMP" || status=$?
exit "$status"
