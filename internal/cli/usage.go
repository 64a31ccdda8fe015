package cli

import (
	"fmt"
	"strings"
)

func usage(f *flags) string {
	var b strings.Builder
	fmt.Fprintf(&b, `%[1]s: an MCP server whose one tool, run_command, runs programs in a sandbox.

Usage:
  %[1]s --workspace DIR [options]                  serve MCP on stdin and stdout
  %[1]s --workspace DIR [options] -- CMD [ARG...]  run one command in the same sandbox
  %[1]s --check [--workspace DIR] [options]        say what this machine enforces
  %[1]s homes [--prune]                            list the private homes; remove
                                                   those whose workspace is gone
  %[1]s --version | --help

Commands can write only in the workspace, the --writable paths and a private
/tmp (on macOS: $TMPDIR); they read the rest of the system, minus your home
directory, credential files and host /tmp. They have no network but HTTP(S)
through the server's proxy to the hosts --allow-net lists (anything else gets
403 from it at once), no capabilities, and see only their own processes. Git's
hooks and config stay read-only, and repositories a command makes are judged
by your git before the result returns.

Options:
`, name)
	b.WriteString(f.set.FlagUsagesWrapped(100))
	fmt.Fprintf(&b, `
Sizes take B; K, M, G or KiB, MiB, GiB (powers of 1024); or KB, MB, GB
(powers of 1000, as in GNU coreutils). Durations take s, m or h (50s, 2m).
Limits are per command, held by a delegated cgroup v2: where systemd runs, the
server asks it for a scope of its own. Without one, memory is limited per
process (RLIMIT_DATA), which does not count shared memory, pipe and socket
buffers or kernel memory; --check says what holds each limit here.
A one-shot command (after --) has no time limit unless --timeout is given, and
exits with its own status (128+N for signal N, 127 not found, 126 not
executable, 125 sandbox setup failed, 124 timed out).

Linux needs user namespaces (and Landlock, kernel 5.13+, for
--without-namespaces); macOS needs /usr/bin/sandbox-exec (macOS 12+), holds
limits with rlimits only, and refuses --memory, --tmp-size and --cpus; Windows
is refused.
`)
	return b.String()
}
