package sandbox

import (
	"fmt"
	"strings"

	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
)

// Mechanism is what holds a limit. Its value is the word messages give it:
// "memory limit 4 GiB per process (rlimit)".
type Mechanism string

const (
	NoLimit        Mechanism = ""              // the limit is off
	ByCgroup       Mechanism = "cgroup"        // the command's cgroup v2, for all its processes
	ByRlimit       Mechanism = "rlimit"        // setrlimit in the sandbox's user namespace
	ByPidNamespace Mechanism = "pid namespace" // the sandbox's pid_max (Linux 6.14+)
	ByTmpfs        Mechanism = "tmpfs"         // the size of each private tmpfs
	// ByUserRlimit is RLIMIT_NPROC where it counts every process of the
	// user, not the sandbox's (macOS).
	ByUserRlimit Mechanism = "rlimit per user"
)

// Mechanisms says what holds each limit on this machine.
type Mechanisms struct {
	Memory    Mechanism `json:"memory"`
	Processes Mechanism `json:"processes"`
	FileSize  Mechanism `json:"file_size"`
	Tmp       Mechanism `json:"tmp"`
	CPUTime   Mechanism `json:"cpu_time"`
	CPUs      Mechanism `json:"cpus"`
	// Seatbelt is set on macOS, where commands run under Seatbelt: their
	// temporary files go to $TMPDIR, not /tmp, and there is no loopback.
	// The model is told (Caveats).
	Seatbelt bool `json:"-"`
	// WithoutNamespaces is set when commands run without namespaces:
	// RLIMIT_NPROC then counts every process of the caller's, and there is
	// no private tmpfs to size.
	WithoutNamespaces bool `json:"without_namespaces,omitempty"`
}

// reservedPids is the kernel's RESERVED_PIDS: once pids wrap, allocation
// starts again above it. A pid namespace's pid_max of N+reservedPids keeps
// N pids free after every wrap, and allows at most N+reservedPids-1 before
// the first.
const reservedPids = 300

// mechanisms chooses how each limit of l is held on a machine with caps, or
// refuses a limit nothing here can hold. uid is the caller's: RLIMIT_NPROC
// does not bind root.
func mechanisms(l policy.Limits, caps Capabilities, uid int) (Mechanisms, *Refusal) {
	if caps.OS == "darwin" {
		return seatbeltMechanisms(l)
	}
	m := Mechanisms{WithoutNamespaces: caps.WithoutNamespaces}
	cg := caps.Cgroup != ""
	if l.MemoryBytes > 0 {
		m.Memory = ByRlimit
		if cg {
			m.Memory = ByCgroup
		}
	}
	if l.MaxProcesses > 0 {
		switch {
		case cg:
			m.Processes = ByCgroup
		case uid != 0:
			m.Processes = ByRlimit
		case caps.PidNSMax && !caps.WithoutNamespaces:
			m.Processes = ByPidNamespace
		default:
			return m, &Refusal{
				Cause: fmt.Sprintf("--max-processes cannot be held for a root caller here: RLIMIT_NPROC does not bind root, there is no delegated cgroup v2 (%s), and this kernel (%s) has no per-namespace pid_max (Linux 6.14+)", caps.CgroupWhy, caps.Kernel),
				Fix:   "run the server as a regular user, give it a delegated cgroup v2 (systemd-run --scope -p Delegate=yes ...), or pass --max-processes 0 to run without a process limit",
			}
		}
	}
	if l.MaxFileBytes > 0 {
		m.FileSize = ByRlimit
	}
	if l.TmpBytes > 0 && !caps.WithoutNamespaces {
		m.Tmp = ByTmpfs // without namespaces there is no tmpfs of the sandbox's: Report says so
	}
	if l.CPUTime > 0 {
		m.CPUTime = ByRlimit
	}
	if l.CPUs > 0 {
		if !cg {
			return m, &Refusal{
				Cause: "--cpus needs a delegated cgroup v2 (cpu.max), and there is none: " + caps.CgroupWhy,
				Fix:   "start the server under systemd-run --user --scope -p Delegate=yes (or as a systemd service with Delegate=yes), or drop --cpus",
			}
		}
		if !caps.CgroupCPU {
			return m, &Refusal{
				Cause: "--cpus needs the cpu controller in the delegated cgroup " + caps.Cgroup + ", and it is not there",
				Fix:   "delegate the cpu controller (Delegate=cpu memory pids), or drop --cpus",
			}
		}
		m.CPUs = ByCgroup
	}
	return m, nil
}

// Report lists each limit with its value and mechanism, one per line.
func (m Mechanisms) Report(l policy.Limits) string {
	var b strings.Builder
	line := func(name, value string, mech Mechanism) {
		if mech == NoLimit {
			fmt.Fprintf(&b, "  %-14s none\n", name)
			return
		}
		fmt.Fprintf(&b, "  %-14s %s (%s)\n", name, value, mech)
	}
	scope := "per process"
	if m.Memory == ByCgroup {
		scope = "for the whole command"
	}
	line("memory", policy.FormatSize(l.MemoryBytes)+" "+scope, m.Memory)
	if m.Memory == ByRlimit {
		indentLines(&b, rlimitMemory)
	}
	procs := fmt.Sprint(l.MaxProcesses)
	if m.WithoutNamespaces && m.Processes == ByRlimit {
		procs += " more than the caller has when the command starts (RLIMIT_NPROC counts all of them)"
	}
	if m.Processes == ByPidNamespace {
		procs += fmt.Sprintf(", up to %d more before pids first wrap", reservedPids-1)
	}
	line("processes", procs, m.Processes)
	if m.Processes == ByUserRlimit {
		indentLines(&b, userRlimitProcesses)
	}
	line("file size", policy.FormatSize(l.MaxFileBytes), m.FileSize)
	if m.WithoutNamespaces && l.TmpBytes > 0 {
		fmt.Fprintf(&b, "  %-14s none: without namespaces there is no private tmpfs; $TMPDIR is a directory on disk, like the workspace\n", "tmp size")
	} else {
		line("tmp size", policy.FormatSize(l.TmpBytes)+" each for /tmp, /var/tmp, /run, /dev/shm", m.Tmp)
	}
	line("cpu time", l.CPUTime.String()+" per process", m.CPUTime)
	line("cpus", fmt.Sprint(l.CPUs), m.CPUs)
	return b.String()
}

// limitKind is a limit that can stop a command.
type limitKind uint8

const (
	memoryLimit limitKind = iota + 1
	processLimit
	fileSizeLimit
	cpuTimeLimit
	tmpLimit
)

// limitHit is a limit that stopped a command, and what held it, as the
// helper or the command's cgroup found it.
type limitHit struct {
	Kind limitKind `json:"kind"`
	Mech Mechanism `json:"mech"`
	Dir  string    `json:"dir,omitempty"` // the tmpfs that filled up, for tmpLimit
}

// words names the limit with its value from l and its mechanism, as a
// result gives it: "memory limit 4 GiB per process (rlimit)". Every
// message about a limit that was reached is worded here.
func (h limitHit) words(l policy.Limits) string {
	switch h.Kind {
	case memoryLimit:
		scope := " per process"
		if h.Mech == ByCgroup {
			scope = ""
		}
		return fmt.Sprintf("memory limit %s%s (%s)", policy.FormatSize(l.MemoryBytes), scope, h.Mech)
	case processLimit:
		return fmt.Sprintf("process limit %d (%s)", l.MaxProcesses, h.Mech)
	case fileSizeLimit:
		return fmt.Sprintf("file size limit %s (%s)", policy.FormatSize(l.MaxFileBytes), h.Mech)
	case cpuTimeLimit:
		return fmt.Sprintf("CPU time limit %s per process (%s)", l.CPUTime, h.Mech)
	case tmpLimit:
		return fmt.Sprintf("%s size limit %s (%s)", h.Dir, policy.FormatSize(l.TmpBytes), h.Mech)
	}
	return bug(fmt.Errorf("limit kind %d", h.Kind)).Error()
}
