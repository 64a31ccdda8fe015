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
	Kernel string `json:"kernel,omitempty"` // kernel release, where there is one
	// LandlockABI is the Landlock ABI version; 0 if Landlock is missing,
	// and LandlockWhy says why (Linux only).
	LandlockABI int    `json:"landlock_abi"`
	LandlockWhy string `json:"landlock_unavailable,omitempty"`
	// UserNS is empty when user namespaces can be created and give the
	// capabilities the sandbox needs in them, else why not; UserNSKind
	// names the case (UserNSRefused, UserNSNoCapabilities) and UserNSFix
	// says how to allow them (Linux only).
	UserNS     string `json:"user_ns_unavailable,omitempty"`
	UserNSKind string `json:"user_ns_kind,omitempty"`
	UserNSFix  string `json:"user_ns_fix,omitempty"`
	// AppArmor is set when AppArmor restricts user namespaces (Ubuntu
	// 23.10+) and they are unavailable: [AppArmorProfiles] allow them.
	AppArmor bool `json:"apparmor_restricts_userns,omitempty"`
	// Container names the container runtime the server seems to run
	// under ("Docker", "Podman", "Kubernetes"), or is empty.
	Container string `json:"container,omitempty"`
	// Seccomp is empty when seccomp filters are available, else why not.
	// SeccompInherited is set when a filter already applies to the server
	// (a container's, or its launcher's); the sandbox's stacks on it.
	Seccomp          string `json:"seccomp_unavailable,omitempty"`
	SeccompInherited bool   `json:"seccomp_inherited,omitempty"`
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
}

// The cases of unavailable user namespaces (Capabilities.UserNSKind).
const (
	// UserNSRefused: creating one fails (a sysctl, a limit, a container's
	// seccomp filter, AppArmor without a profile to fall back on).
	UserNSRefused = "refused"
	// UserNSNoCapabilities: one is made, but without the capabilities to
	// mount in it (Ubuntu 23.10+'s AppArmor restriction, a container's
	// security profile).
	UserNSNoCapabilities = "no-capabilities"
)

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
		// TODO(#6): the Seatbelt sandbox; until it lands macOS is refused.
		return &Refusal{Cause: "macOS is not supported yet: the Seatbelt sandbox has not landed", Fix: "run the server on Linux for now"}
	case "windows":
		return &Refusal{Cause: "Windows is not supported: a sandbox there could limit resources, not access", Fix: "run the server in WSL 2, which is Linux"}
	default:
		return &Refusal{Cause: fmt.Sprintf("%s is not supported", c.OS), Fix: "run the server on Linux or macOS"}
	}
	if c.Arch != "amd64" && c.Arch != "arm64" {
		return &Refusal{Cause: fmt.Sprintf("architecture %s is not supported: its seccomp filter has not been reviewed", c.Arch), Fix: "run the server on amd64 (x86-64) or arm64"}
	}
	// No Landlock is no refusal here: the mounts hold the filesystem
	// policy, and Report and the tool's description say the second layer
	// is missing.
	if c.UserNS != "" {
		return &Refusal{Cause: c.userNSCause(), Fix: c.UserNSFix}
	}
	if c.Seccomp != "" {
		return &Refusal{Cause: "seccomp filters are unavailable: " + c.Seccomp, Fix: "use a kernel built with CONFIG_SECCOMP_FILTER"}
	}
	return nil
}

// userNSCause says in a sentence why the sandbox's namespaces are
// unavailable.
func (c Capabilities) userNSCause() string {
	if c.UserNSKind == UserNSNoCapabilities {
		return "user namespaces give no capabilities here: " + c.UserNS
	}
	return "cannot create user namespaces: " + c.UserNS
}

// landlockFix says how to get Landlock.
const landlockFix = "use Linux 5.13 or newer with Landlock enabled (CONFIG_SECURITY_LANDLOCK=y and \"landlock\" in the lsm= boot parameter)"

// MissingLayer names the defence-in-depth layer this machine lacks while
// another layer does its job (Landlock, where the mounts hold the
// filesystem policy), in a sentence for the tool's description; empty
// when none is missing.
func (c Capabilities) MissingLayer() string {
	if c.OS != "linux" || c.LandlockABI >= 1 {
		return ""
	}
	return "Landlock is unavailable on this machine: the sandbox's mounts alone keep commands to the paths above (Landlock, the second layer under them, is missing)."
}

// Report lists each layer and whether it is active, one per line.
func (c Capabilities) Report() string {
	var b strings.Builder
	fmt.Fprintf(&b, "platform      %s/%s", c.OS, c.Arch)
	if c.Kernel != "" {
		fmt.Fprintf(&b, ", kernel %s", c.Kernel)
	}
	b.WriteString("\n")
	if c.OS != "linux" {
		return b.String()
	}
	yes := func(ok bool, good, bad string) string {
		if ok {
			return "ok    " + good
		}
		return "MISSING " + bad
	}
	fmt.Fprintf(&b, "namespaces    %s\n", yes(c.UserNS == "", "user, mount, pid, net, ipc, uts, cgroup", c.userNSCause()))
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
	if c.LandlockABI < 1 {
		lab = c.LandlockWhy
		if lab == "" {
			lab = "not in this kernel"
		}
		if c.UserNS == "" {
			lab += "; the mounts hold the filesystem policy without this second layer"
		}
	}
	fmt.Fprintf(&b, "landlock      %s\n", yes(c.LandlockABI >= 1, lab, lab))
	sec := "filter with TSYNC, " + c.Arch + " syscall table"
	if c.SeccompInherited {
		sec += "; a filter already applies to the server"
		if c.Container != "" {
			sec += " (" + c.Container + "'s)"
		}
		sec += ", and the sandbox's stacks on it"
	}
	fmt.Fprintf(&b, "seccomp       %s\n", yes(c.Seccomp == "", sec, c.Seccomp))
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
