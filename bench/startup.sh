#!/usr/bin/env bash
# One sandboxed `true` from the command line, side by side with bubblewrap
# running `true` under a comparable policy (read-only root, private /tmp,
# /run and /var/tmp, a writable workspace, fresh /proc and /dev, every
# namespace unshared). Needs hyperfine and bwrap (Debian: hyperfine,
# bubblewrap). Prints hyperfine's table; compare the means as a ratio.
set -euo pipefail
cd "$(dirname "$0")/.."
for t in hyperfine bwrap; do
  command -v "$t" >/dev/null || { echo "bench/startup.sh: needs $t (apt-get install hyperfine bubblewrap)" >&2; exit 2; }
done
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
CGO_ENABLED=0 go build -trimpath -o "$dir/nanosandbox-mcp" .
ws="$dir/ws"
mkdir -p "$ws"
hyperfine -N --warmup 10 --runs "${RUNS:-100}" \
  -n nanosandbox-mcp "$dir/nanosandbox-mcp --workspace $ws -- true" \
  -n bwrap "bwrap --unshare-all --die-with-parent --new-session --ro-bind / / --tmpfs /tmp --tmpfs /run --tmpfs /var/tmp --bind $ws $ws --proc /proc --dev /dev --chdir $ws true"
