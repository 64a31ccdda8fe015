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
	// Seatbelt is empty when /usr/bin/sandbox-exec can apply a profile,
	// else why not (macOS only).
	Seatbelt string `json:"seatbelt_unavailable,omitempty"`

	// WithoutNamespaces is not found but asked for (--without-namespaces):
	// commands are to run without namespaces, and Refusal and Report
	// judge what that mode needs (Linux only).
	WithoutNamespaces bool `json:"without_namespaces,omitempty"`
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
		return c.seatbeltRefusal()
	case "windows":
		return &Refusal{Cause: "Windows is not supported: a sandbox there could limit resources, not access", Fix: "run the server in WSL 2, which is Linux"}
	default:
		return &Refusal{Cause: fmt.Sprintf("%s is not supported", c.OS), Fix: "run the server on Linux or macOS"}
	}
	if c.Arch != "amd64" && c.Arch != "arm64" {
		return &Refusal{Cause: fmt.Sprintf("architecture %s is not supported: its seccomp filter has not been reviewed", c.Arch), Fix: "run the server on amd64 (x86-64) or arm64"}
	}
	if c.WithoutNamespaces {
		return c.reducedRefusal()
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

// reducedRefusal returns why commands cannot run without namespaces here,
// or nil: Landlock takes the mounts' place, and seccomp holds what the
// other namespaces did.
func (c Capabilities) reducedRefusal() *Refusal {
	if c.LandlockABI < 1 {
		return &Refusal{
			Cause: "--without-namespaces needs Landlock, which keeps commands to their paths in place of the mounts: " + c.LandlockWhy,
			Fix:   landlockFix,
		}
	}
	if c.Seccomp != "" {
		return &Refusal{Cause: "seccomp filters are unavailable: " + c.Seccomp, Fix: "use a kernel built with CONFIG_SECCOMP_FILTER"}
	}
	return nil
}

// rootWithoutNamespaces refuses a root caller without namespaces: its
// commands would run as root, without capabilities but passing every owner
// check on root's files, which Landlock's allow-list of trees shows.
var rootWithoutNamespaces = &Refusal{
	Cause: "--without-namespaces cannot run a root caller's commands: without a user namespace they would run as root, whose owner checks pass on root's files",
	Fix:   "start the server as a regular user (in a container: docker run --user 1000:1000, or su to one), or let it use namespaces (" + appName + " --check says how)",
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
	return "Landlock is unavailable on this machine: the sandbox's mounts alone keep commands to the paths above (Landlock, the second layer under them, is missing); FIFOs excepted, which a read-only mount does not close to writers."
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
	fmt.Fprintf(&b, "namespaces    %s\n", yes(c.UserNS == "", "user, mount, pid, net, ipc, uts, cgroup", c.userNSCause()))
	if c.WithoutNamespaces {
		mode := "without namespaces (--without-namespaces): Landlock, seccomp and rlimits hold the sandbox"
		if c.UserNS == "" {
			mode += "; namespaces work here, and without the flag the full sandbox runs"
		}
		fmt.Fprintf(&b, "mode          %s\n", mode)
	}
	switch {
	case c.WithoutNamespaces:
		fmt.Fprintf(&b, "identity      ok    the caller, no capabilities (a root caller is refused without namespaces)\n")
	case c.Identity != "":
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
	if c.WithoutNamespaces && c.LandlockABI >= 1 {
		lab = fmt.Sprintf("ABI %d: writes to the writable paths, reads to the system's trees", c.LandlockABI)
		for _, f := range []struct {
			abi  int
			what string
		}{{2, "links and renames across directories"}, {3, "truncate"}, {4, "TCP"}, {6, "signal and abstract socket scoping"}, {9, "named unix sockets"}} {
			if c.LandlockABI >= f.abi {
				lab += ", " + f.what
			}
		}
	}
	if c.LandlockABI < 1 {
		lab = c.LandlockWhy
		if lab == "" {
			lab = "not in this kernel"
		}
		if c.UserNS == "" && !c.WithoutNamespaces {
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
	} else if c.WithoutNamespaces {
		fmt.Fprintf(&b, "limits        ok    rlimits (no cgroup v2: %s)\n", c.CgroupWhy)
	} else {
		fmt.Fprintf(&b, "limits        ok    rlimits, tmpfs sizes and the pid namespace (no cgroup v2: %s)\n", c.CgroupWhy)
	}
	if !c.WithoutNamespaces {
		fmt.Fprintf(&b, "network       ok    none (own network namespace, loopback only)\n")
		return b.String()
	}
	kill := "a subreaper: the helper kills every process a call leaves when it ends"
	if c.Cgroup != "" {
		kill = "the call's cgroup, and the helper as subreaper"
	}
	fmt.Fprintf(&b, "processes     ok    %s\n", kill)
	network := "none: seccomp refuses internet sockets"
	if c.LandlockABI >= 4 {
		network += ", Landlock TCP"
	}
	fmt.Fprintf(&b, "network       ok    %s\n", network)
	if c.LandlockABI >= 9 {
		fmt.Fprintf(&b, "unix sockets  ok    named ones only beneath the writable paths (Landlock ABI 9)\n")
	} else {
		fmt.Fprintf(&b, "unix sockets  ok    in pairs only: Landlock below ABI 9 cannot keep named ones from the host's, so seccomp refuses socket(AF_UNIX)\n")
	}
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

// reducedCaveats says what depends on the kernel's Landlock in the sandbox
// without namespaces, in sentences for the tool's description.
func reducedCaveats(abi int, hostNetwork bool) []string {
	var out []string
	if abi < 6 {
		out = append(out, fmt.Sprintf("Landlock ABI %d (below 6) cannot scope signals: commands can signal the user's processes.", abi))
	}
	if abi < 9 {
		out = append(out, "Unix sockets exist only in pairs (socketpair): commands cannot create or connect to named or abstract ones.")
	}
	if abi < 3 {
		out = append(out, "truncate(2) by path is refused: open the file and truncate it instead.")
	}
	if !hostNetwork {
		out = append(out, "There is no loopback of the sandbox's own: nothing can listen on or connect to 127.0.0.1.")
	}
	out = append(out, "There are no pseudo-terminals.")
	return out
}
