#!/usr/bin/env bash
# nanosandbox-mcp side by side with its peers, every figure a median of
# interleaved runs, repeated, with ratios ours / peer (docs/BENCHMARKS.md
# holds the last table and how to read it).
#
#   bench/peers.sh [--reps N] [--runs N] [--calls N] ...   the full run (about 6 minutes)
#   bench/peers.sh --smoke                                 our own figures once, no peers
#
# The full run installs the peers: bubblewrap, firejail, sandbox-runtime's
# dependencies (socat, ripgrep) and perf from Debian, in the release's
# versions (the table names them); @openai/codex-shell-tool-mcp,
# mcp-server-commands and @anthropic-ai/sandbox-runtime from npm, pinned,
# into a private prefix, with @openai/codex of codex-shell-tool-mcp's version
# for its Linux sandbox helper, which that package does not ship. The smoke
# mode installs nothing and fails only if a figure of ours has no number or
# our sandbox let a probe write out of its workspace. Other options go to
# bench/peers.py (--help lists them). Run as root; ours also runs as the
# user nsbtest when it exists (--user NAME for another).
set -euo pipefail
cd "$(dirname "$0")/.."

CODEX_VERSION=0.97.0
NPM_PEERS=(
  "@openai/codex-shell-tool-mcp@$CODEX_VERSION"
  "@openai/codex@$CODEX_VERSION"
  mcp-server-commands@0.5.0
  @anthropic-ai/sandbox-runtime@0.0.83
)
# Debian package, and the command it brings.
APT_PEERS=(bubblewrap:bwrap firejail:firejail socat:socat ripgrep:rg linux-perf:perf)

smoke=false
for a in "$@"; do
  case $a in
    --smoke) smoke=true ;;
    -h | --help) sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"; python3 bench/peers.py --help; exit 0 ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "bench/peers.sh: run as root (the peers are installed, ours also runs as another user)" >&2; exit 2; }

# Scratch: binaries, npm prefix, workspaces. firejail puts its own tmpfs on
# /tmp and /var/tmp, so the full run keeps its workspaces out of both.
parent=${TMPDIR:-/tmp}
if ! $smoke && [ -d /home ]; then parent=/home; fi
scratch=$(mktemp -d "$parent/nsb-bench.XXXXXX")
chmod 755 "$scratch"
cleanup() {
  # Every server and command was started under $scratch; none may outlive us.
  local left
  left=$(pgrep -f -- "$scratch" || true)
  if [ -n "$left" ]; then
    echo "bench/peers.sh: left running, now killed: $left" >&2
    kill -9 $left 2>/dev/null || true
  fi
  rm -rf "$scratch"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "== build" >&2
mkdir -p "$scratch/bin"
# The full run measures what a release ships: the C exec stage built and
# embedded (its build.sh installs its pinned zig). The smoke mode builds
# nothing more than the binary, with whatever stage is there.
built="built as the release is: CGO_ENABLED=0 -trimpath -ldflags '-s -w'"
if ! $smoke; then
  internal/sandbox/cstage/build.sh >&2
  built="with the helper and exec stage in C (internal/sandbox/cstage/build.sh), $built"
fi
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$scratch/bin/nanosandbox-mcp" .
chmod 755 "$scratch/bin" "$scratch/bin/nanosandbox-mcp"

ours="commit $(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
git diff --quiet HEAD 2>/dev/null || ours+=" with uncommitted changes"
args=(--bin "$scratch/bin/nanosandbox-mcp" --scratch "$scratch/run" --command "bench/peers.sh${*:+ $*}"
  --ours-version "$ours, $built ($(stat -c %s "$scratch/bin/nanosandbox-mcp") bytes)")
mkdir -p "$scratch/run"

if ! $smoke; then
  echo "== peers from Debian" >&2
  missing=()
  for p in "${APT_PEERS[@]}"; do
    command -v "${p#*:}" >/dev/null || missing+=("${p%%:*}")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    apt-get update -qq
    for pkg in "${missing[@]}"; do
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$pkg" >/dev/null ||
        echo "bench/peers.sh: apt-get install $pkg failed; its figures will say so" >&2
    done
  fi
  dpkg-query -W -f '${Package} ${Version}\n' "${APT_PEERS[@]%%:*}" 2>/dev/null >&2 || true

  echo "== peers from npm (${NPM_PEERS[*]})" >&2
  npm="$scratch/npm"
  mkdir -p "$npm"
  if npm install --prefix "$npm" --no-audit --no-fund --loglevel=error "${NPM_PEERS[@]}" >&2; then
    args+=(--npm-prefix "$npm")
    # codex-linux-sandbox is the codex binary called by that name.
    case $(uname -m) in
      x86_64) triple=x86_64-unknown-linux-musl ;;
      aarch64) triple=aarch64-unknown-linux-musl ;;
      *) triple=unknown ;;
    esac
    codex="$npm/node_modules/@openai/codex/vendor/$triple/codex/codex"
    if [ -x "$codex" ]; then
      ln -s "$codex" "$scratch/bin/codex-linux-sandbox"
      args+=(--codex-linux-sandbox "$scratch/bin/codex-linux-sandbox")
    else
      echo "bench/peers.sh: no codex binary for $(uname -m) in @openai/codex: no codex-shell-tool-mcp figures" >&2
    fi
  else
    echo "bench/peers.sh: npm install failed: no figures for the npm peers" >&2
  fi
fi

echo "== measure" >&2
python3 bench/peers.py "${args[@]}" "$@"
