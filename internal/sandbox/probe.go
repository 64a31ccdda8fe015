package sandbox

import (
	"fmt"
	"strings"

	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
)

// Capabilities is what this machine can enforce, found once at start.
type Capabilities struct {
	OS     string `json:"os"`
	Arch   string `json:"arch"`
	Kernel string `json:"kernel,omitempty"` // kernel release, where there is one (on macOS the system's version too)
	// LandlockABI is the Landlock ABI version; 0 if Landlock is missing
	// (Linux only).
	LandlockABI int `json:"landlock_abi"`
	// UserNS is empty when user namespaces can be created, else why not;
	// UserNSFix says how to allow them (Linux only).
	UserNS    string `json:"user_ns_unavailable,omitempty"`
	UserNSFix string `json:"user_ns_fix,omitempty"`
	// Seccomp is empty when seccomp filters are available, else why not.
	Seccomp string `json:"seccomp_unavailable,omitempty"`
	// Cgroup is the server's delegated cgroup v2 directory, where commands
	// get their own cgroups; empty if there is none, and CgroupWhy says
	// why. CgroupCPU reports the cpu controller there.
	Cgroup    string `json:"cgroup,omitempty"`
	CgroupWhy string `json:"cgroup_unavailable,omitempty"`
	CgroupCPU bool   `json:"cgroup_cpu"`
	// CgroupScope names the systemd manager that started a scope for the
	// server ([JoinScope]), where Cgroup is; empty if none did.
	CgroupScope string `json:"cgroup_scope,omitempty"`
	// PidNSMax reports a per-namespace pid_max (Linux 6.14+), which limits
	// processes where RLIMIT_NPROC cannot (a root caller).
	PidNSMax bool `json:"pid_ns_max"`
	// Identity says whom commands run as on the host; empty where it is
	// not known.
	Identity string `json:"identity,omitempty"`
	// Seatbelt is empty when /usr/bin/sandbox-exec can apply a profile,
	// else why not (macOS only).
	Seatbelt string `json:"seatbelt_unavailable,omitempty"`
}

// Probe finds what this machine can enforce, proving by trying what only a
// try shows (on Linux: it starts one short-lived process to prove user
// namespaces work).
func Probe() Capabilities { return probe(false) }

// QuickProbe is Probe without the tries: what they would prove is assumed,
// and the first run says so if it does not hold (the one-shot command line
// saves the probe's few milliseconds this way).
func QuickProbe() Capabilities { return probe(true) }

// Refusal is a reason this machine cannot hold the policy, with the fix.
type Refusal struct {
	Cause string
	Fix   string
}

func (r *Refusal) Error() string { return r.Cause }

// Explain returns the cause and the fix.
func (r *Refusal) Explain() (msg, hint string) { return r.Cause, r.Fix }

var _ policy.Hinted = (*Refusal)(nil)

// Refusal returns why the sandbox cannot run here, or nil. Nothing is ever
// weakened to make it run: each missing layer is a refusal.
func (c Capabilities) Refusal() *Refusal {
	switch c.OS {
	case "linux":
	case "darwin":
		return c.seatbeltRefusal()
	case "windows":
		return &Refusal{Cause: "Windows is not supported: a sandbox there could limit resources, not access", Fix: "run the server in WSL 2, which is Linux"}
	default:
		return &Refusal{Cause: fmt.Sprintf("%s is not supported", c.OS), Fix: "run the server on Linux or macOS"}
	}
	if c.Arch != "amd64" && c.Arch != "arm64" {
		return &Refusal{Cause: fmt.Sprintf("architecture %s is not supported: its seccomp filter has not been reviewed", c.Arch), Fix: "run the server on amd64 (x86-64) or arm64"}
	}
	if c.LandlockABI < 1 {
		return &Refusal{Cause: "this kernel has no Landlock (kernel " + c.Kernel + "), the sandbox's second layer", Fix: "use Linux 5.13 or newer with Landlock enabled (CONFIG_SECURITY_LANDLOCK=y and \"landlock\" in the lsm= boot parameter)"}
	}
	if c.UserNS != "" {
		return &Refusal{Cause: "cannot create user namespaces: " + c.UserNS, Fix: c.UserNSFix}
	}
	if c.Seccomp != "" {
		return &Refusal{Cause: "seccomp filters are unavailable: " + c.Seccomp, Fix: "use a kernel built with CONFIG_SECCOMP_FILTER"}
	}
	return nil
}

// Report lists each layer and whether it is active, one per line.
func (c Capabilities) Report() string {
	var b strings.Builder
	fmt.Fprintf(&b, "platform      %s/%s", c.OS, c.Arch)
	switch {
	case c.Kernel == "":
	case c.OS == "darwin":
		fmt.Fprintf(&b, ", %s", c.Kernel) // macOS 14.7 (Darwin 23.6.0)
	default:
		fmt.Fprintf(&b, ", kernel %s", c.Kernel)
	}
	b.WriteString("\n")
	if c.OS == "darwin" {
		c.seatbeltReport(&b)
		return b.String()
	}
	if c.OS != "linux" {
		return b.String()
	}
	yes := func(ok bool, good, bad string) string {
		if ok {
			return "ok    " + good
		}
		return "MISSING " + bad
	}
	fmt.Fprintf(&b, "namespaces    %s\n", yes(c.UserNS == "", "user, mount, pid, net, ipc, uts, cgroup", c.UserNS))
	if c.Identity != "" {
		fmt.Fprintf(&b, "identity      ok    %s, no capabilities\n", c.Identity)
	}
	lab := fmt.Sprintf("ABI %d", c.LandlockABI)
	if c.LandlockABI >= 6 {
		lab += " (filesystem, signal and abstract socket scoping)"
	} else if c.LandlockABI >= 2 {
		lab += " (filesystem)"
	} else if c.LandlockABI == 1 {
		lab += " (filesystem; renames across directories are refused below ABI 2)"
	}
	fmt.Fprintf(&b, "landlock      %s\n", yes(c.LandlockABI >= 1, lab, "not in this kernel"))
	fmt.Fprintf(&b, "seccomp       %s\n", yes(c.Seccomp == "", "filter with TSYNC, "+c.Arch+" syscall table", c.Seccomp))
	if c.Cgroup != "" {
		fmt.Fprintf(&b, "limits        ok    cgroup v2, delegated at %s", c.Cgroup)
		if c.CgroupScope != "" {
			fmt.Fprintf(&b, " (a scope %s started for the server)", c.CgroupScope)
		}
		b.WriteString("\n")
	} else {
		fmt.Fprintf(&b, "limits        ok    rlimits, tmpfs sizes and the pid namespace (no cgroup v2: %s)\n", c.CgroupWhy)
	}
	fmt.Fprintf(&b, "network       ok    none (own network namespace, loopback only)\n")
	return b.String()
}

// kernelAtLeast reports whether a kernel release ("6.18.44-...") is at
// least major.minor.
func kernelAtLeast(release string, major, minor int) bool {
	var ma, mi int
	if _, err := fmt.Sscanf(release, "%d.%d", &ma, &mi); err != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}
