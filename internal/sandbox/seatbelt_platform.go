package sandbox

import (
	"fmt"
	"strings"

	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
)

// What macOS can hold, and what it refuses: here with no build tag, so
// Linux tests it; probe_darwin.go finds the facts.

// seatbeltRefusal returns why macOS cannot run the sandbox here, or nil.
func (c Capabilities) seatbeltRefusal() *Refusal {
	switch {
	case c.Arch != "amd64" && c.Arch != "arm64":
		return &Refusal{Cause: fmt.Sprintf("architecture %s is not supported on macOS", c.Arch), Fix: "run the server on an Apple silicon (arm64) or Intel (amd64) Mac"}
	case c.Seatbelt != "":
		return &Refusal{
			Cause: "Seatbelt cannot sandbox commands here: " + c.Seatbelt,
			Fix:   "run the server outside any other sandbox (an app's or an agent's own: a sandboxed process cannot start another), on macOS 12 or later, where /usr/bin/sandbox-exec exists",
		}
	}
	return nil
}

// seatbeltReport lists each macOS layer and whether it is active.
func (c Capabilities) seatbeltReport(b *strings.Builder) {
	if c.Seatbelt != "" {
		fmt.Fprintf(b, "seatbelt      MISSING %s\n", c.Seatbelt)
	} else {
		fmt.Fprintf(b, "seatbelt      ok    /usr/bin/sandbox-exec, a profile generated for each command: deny by default\n")
	}
	if c.Identity != "" {
		fmt.Fprintf(b, "identity      ok    %s\n", c.Identity)
	}
	fmt.Fprintf(b, "processes     ok    a process group and a reaper inside each command's sandbox (no pid namespace on macOS)\n")
	fmt.Fprintf(b, "limits        ok    rlimits (macOS has no cgroups)\n")
	fmt.Fprintf(b, "network       ok    none (Seatbelt denies every connection, loopback and unix sockets included)\n")
}

// seatbeltMechanisms chooses how each limit of l is held on macOS, or
// refuses one nothing there can hold: it has no cgroups, no tmpfs for
// commands, and no rlimit that bounds memory (RLIMIT_AS cannot be lowered
// and RLIMIT_DATA does not count what malloc maps).
func seatbeltMechanisms(l policy.Limits) (Mechanisms, *Refusal) {
	m := Mechanisms{Seatbelt: true}
	switch {
	case l.MemoryBytes > 0:
		return m, &Refusal{
			Cause: "--memory cannot be held on macOS: it has no memory limit for a command (no cgroups; RLIMIT_AS cannot be lowered there, and RLIMIT_DATA does not count what malloc maps)",
			Fix:   "leave --memory out, or pass --memory 0: commands on macOS run without a memory limit",
		}
	case l.TmpBytes > 0:
		return m, &Refusal{
			Cause: "--tmp-size cannot be held on macOS: a command's temporary directory is a plain directory on disk, with no size of its own",
			Fix:   "leave --tmp-size out, or pass --tmp-size 0 (--max-file-size still bounds each file)",
		}
	case l.CPUs > 0:
		return m, &Refusal{
			Cause: "--cpus needs cgroup v2 (cpu.max), which only Linux has",
			Fix:   "leave --cpus out on macOS",
		}
	}
	if l.MaxProcesses > 0 {
		m.Processes = ByUserRlimit
	}
	if l.MaxFileBytes > 0 {
		m.FileSize = ByRlimit
	}
	if l.CPUTime > 0 {
		m.CPUTime = ByRlimit
	}
	return m, nil
}

// userRlimitProcesses says what RLIMIT_NPROC holds on macOS, in lines for
// --check under the process limit.
var userRlimitProcesses = []string{
	"macOS counts RLIMIT_NPROC over all of your processes: a command may start",
	"this many more than you run when it starts, and one that reaches it is",
	"not told apart from one that failed",
}
