package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// This file holds what configurations written for nanosandbox-mcp 0.3.x,
// the program this one replaces under the same package names, pass on the
// command line and this one spells otherwise. Their --workspace,
// --read-only, --writable, --env, --host-network, --memory, --max-output
// and --max-concurrent are this program's too; --timeout takes their plain
// seconds; the flags below are refused, like any unknown flag, with a hint
// that names what to pass instead (README.md, "Changelog").

// secondsOrDuration is the value of --timeout: a duration (50s, 2m, 1h30m),
// or a plain number of seconds, as 0.3.x took it (--timeout 30 is 30s).
type secondsOrDuration time.Duration

func (d *secondsOrDuration) String() string { return time.Duration(*d).String() }
func (d *secondsOrDuration) Type() string   { return "duration" }
func (d *secondsOrDuration) Set(v string) error {
	if n, err := strconv.ParseUint(v, 10, 31); err == nil {
		*d = secondsOrDuration(time.Duration(n) * time.Second)
		return nil
	}
	x, err := time.ParseDuration(v)
	if err != nil {
		return err
	}
	*d = secondsOrDuration(x)
	return nil
}

// renamedFlags maps each 0.3.x flag this program does not take to what to
// pass instead.
var renamedFlags = map[string]string{
	"allow-network":   "0.3.x's --allow-network is --allow-net here, one host per flag: --allow-net pypi.org --allow-net files.pythonhosted.org (or a preset: @pypi, @npm, @go, @crates, @github)",
	"max-pids":        "0.3.x's --max-pids is --max-processes here",
	"cpu":             "0.3.x's --cpu is --cpus here",
	"no-hide-home":    "the home stays hidden; pass --read-only with your home's path to let commands read it (credential files stay hidden), or --read-only for each directory they need",
	"deny-read":       "not offered: commands already cannot read your home, credential files or host /tmp, and there is no deny list to extend",
	"no-cache":        "tool caches live in a private home per workspace, outside it (nanosandbox-mcp homes lists them; homes --prune removes those whose workspace is gone)",
	"strict-tmp":      "commands get a private temporary directory per call on every platform (on macOS $TMPDIR, with /tmp read-only), so there is nothing to switch on",
	"host-uid":        "a server running as root runs commands as uid 2147483646, with the granted paths mounted idmapped; there is no uid to choose",
	"host-gid":        "a server running as root runs commands as uid 2147483646 with no supplementary groups; there is no gid to choose",
	"no-seccomp":      "the seccomp filter cannot be turned off",
	"log-io":          "--log-file FILE logs one JSON line per call, never its input or output",
	"audit-dir":       "--log-file FILE appends one JSON line per call (what ran, how it ended)",
	"audit-keep-days": "--log-file FILE appends to one file; rotate it with your usual tools",
	"audit-max-size":  "--log-file FILE appends to one file; rotate it with your usual tools",
	"audit-verify":    "--log-file FILE keeps no hash chain to verify",
	"audit-cleanup":   "--log-file FILE appends to one file; rotate it with your usual tools",
	"clean-tmp":       "nothing to clean: each call's private /tmp is gone when it ends",
}

// renamed returns the usage error for a command-line error that is an
// unknown 0.3.x flag, or nil.
func renamed(err error) *usageError {
	flag, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return nil
	}
	hint, ok := renamedFlags[flag]
	if !ok {
		return nil
	}
	return &usageError{msg: fmt.Sprintf("unknown flag --%s (a flag of nanosandbox-mcp 0.3.x)", flag), hint: hint}
}
