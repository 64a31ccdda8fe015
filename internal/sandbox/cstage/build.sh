#!/bin/sh
# build.sh builds the C exec stage (src/stage.c) for linux/amd64 and
# linux/arm64 into bin/, named as cstage.Name says, where go:embed finds it;
# and the helper in C (src/helper.c with src/sys.h, named as
# cstage.HelperName says), which nothing runs yet but its tests
# (HELPER-PLAN.md).
# The release tooling (.goreleaser.yaml) and CI (.ci/run) run it before
# go build; a build without it runs the Go exec stage.
#
# The compiler is pinned: zig's C compiler (clang and lld) from the ziglang
# package on PyPI, pinned by version and hash, installed into a temporary
# virtual environment unless ZIG names a zig command of the pinned version. Its output is the same byte
# for byte on every machine: no build id, no debug information, stripped,
# and nothing of the build machine (paths, time) read by the compiler.
set -eu
zig_version=0.15.2
cd "$(dirname "$0")"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/nsb-cstage-XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
if [ -z "${ZIG:-}" ]; then
	# Pinned by hash too: the wheels for the Linux machines that build
	# (CI and the release run on linux/amd64 and linux/arm64); elsewhere,
	# pass ZIG.
	cat > "$tmp/requirements.txt" <<-EOF
	ziglang==$zig_version \\
	    --hash=sha256:806316453d1ede7174ed3fefb8e5348154629089c3bb5fe812dfd0e172fac130 \\
	    --hash=sha256:edc0aa60ec964a4cf462d40f68d7de242ddf37fd9a80f2afaee6397059463230
	EOF
	python3 -m venv "$tmp/venv"
	"$tmp/venv/bin/pip" install --quiet --disable-pip-version-check --require-hashes -r "$tmp/requirements.txt"
	ZIG="$tmp/venv/bin/python -m ziglang"
fi
have=$($ZIG version)
if [ "$have" != "$zig_version" ]; then
	echo "build.sh: zig $have, want $zig_version" >&2
	exit 1
fi
# zig's caches in the temporary directory: nothing of an earlier build is
# reused, and nothing is left behind.
export ZIG_GLOBAL_CACHE_DIR="$tmp/zig-global" ZIG_LOCAL_CACHE_DIR="$tmp/zig-local"

proto=$(sed -n 's/^#define NSB_PROTOCOL \([0-9][0-9]*\)$/\1/p' src/stage.c)
hash=$({ printf 'nsb-cstage protocol %s\n' "$proto"; cat src/sys.h src/stage.c; } | sha256sum | cut -c1-16)
hproto=$(sed -n 's/^#define NSB_HELPER_PROTOCOL \([0-9][0-9]*\)$/\1/p' src/helper.c)
hhash=$({ printf 'nsb-chelper protocol %s\n' "$hproto"; cat src/sys.h src/helper.c; } | sha256sum | cut -c1-16)
rm -f bin/stage-* bin/helper-*
for target in x86_64:amd64 aarch64:arm64; do
	arch=${target%%:*} goarch=${target#*:}
	for prog in stage:$hash helper:$hhash; do
		name=${prog%%:*} h=${prog#*:}
		# -fno-builtin keeps the compiler from turning the programs' own
		# memset and memcpy into calls to themselves.
		$ZIG cc -target "$arch-linux-none" -std=c11 -Os -Wall -Wextra -Werror \
			-nostdlib -ffreestanding -static -fno-pie -fno-stack-protector -fno-builtin \
			-fno-asynchronous-unwind-tables -fno-unwind-tables -fno-ident \
			-Wl,--build-id=none -s \
			-o "$tmp/$name-$goarch" "src/$name.c"
		mv "$tmp/$name-$goarch" "bin/$name-linux-$goarch-$h"
	done
done
ls -l bin/stage-* bin/helper-*
