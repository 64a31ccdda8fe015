package sandbox

import (
	"strings"
	"testing"
	"time"

	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
)

func TestRefusal(t *testing.T) {
	ok := Capabilities{OS: "linux", Arch: "amd64", Kernel: "6.18.0", LandlockABI: 7, CgroupWhy: "v1"}
	for _, tt := range []struct {
		name       string
		change     func(*Capabilities)
		cause, fix string
	}{
		{"all present", func(*Capabilities) {}, "", ""},
		// The mounts hold the filesystem policy: a missing second layer is
		// said, not refused (TestReportMissingLandlock).
		{"no Landlock", func(c *Capabilities) { c.LandlockABI = 0 }, "", ""},
		{"no user namespaces", func(c *Capabilities) {
			c.UserNS, c.UserNSKind, c.UserNSFix = "operation not permitted (AppArmor ...)", UserNSRefused, "sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0"
		}, "cannot create user namespaces", "apparmor_restrict_unprivileged_userns"},
		{"user namespaces without capabilities", func(c *Capabilities) {
			c.UserNS, c.UserNSKind, c.UserNSFix = "a mount in a new one fails: ...", UserNSNoCapabilities, "an AppArmor profile"
		}, "user namespaces give no capabilities here: a mount in a new one fails", "AppArmor profile"},
		{"no seccomp", func(c *Capabilities) { c.Seccomp = "ENOSYS" }, "seccomp", "CONFIG_SECCOMP_FILTER"},
		{"another architecture", func(c *Capabilities) { c.Arch = "riscv64" }, "riscv64 is not supported", "amd64"},
		{"macOS", func(c *Capabilities) { c.OS, c.LandlockABI = "darwin", 0 }, "", ""},
		{"macOS without Seatbelt", func(c *Capabilities) {
			c.OS, c.Seatbelt = "darwin", "sandbox_apply: Operation not permitted"
		}, "Seatbelt cannot sandbox commands here: sandbox_apply", "outside any other sandbox"},
		{"macOS on another architecture", func(c *Capabilities) { c.OS, c.Arch = "darwin", "ppc64" }, "ppc64 is not supported on macOS", "arm64"},
		{"Windows", func(c *Capabilities) { c.OS = "windows" }, "Windows is not supported", "WSL"},
		{"another OS", func(c *Capabilities) { c.OS = "freebsd" }, "freebsd is not supported", "Linux or macOS"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.change(&c)
			r := c.Refusal()
			if tt.cause == "" {
				if r != nil {
					t.Fatalf("got %+v, want no refusal", r)
				}
				return
			}
			if r == nil || !strings.Contains(r.Cause, tt.cause) || !strings.Contains(r.Fix, tt.fix) {
				t.Errorf("got %+v, want cause %q and fix %q", r, tt.cause, tt.fix)
			}
		})
	}
}

// TestReportMissingLandlock: without Landlock, --check says why it is
// missing, that the mounts hold the policy without it, and the tool's
// description says which layer is missing.
func TestReportMissingLandlock(t *testing.T) {
	c := Capabilities{OS: "linux", Arch: "amd64", Kernel: "5.10.0", LandlockWhy: "this kernel has no Landlock (Linux before 5.13, or built without CONFIG_SECURITY_LANDLOCK)"}
	want := "landlock      MISSING this kernel has no Landlock (Linux before 5.13, or built without CONFIG_SECURITY_LANDLOCK); the mounts hold the filesystem policy without this second layer\n"
	if got := c.Report(); !strings.Contains(got, want) {
		t.Errorf("got\n%s\nwant a line\n%s", got, want)
	}
	if got := c.MissingLayer(); !strings.Contains(got, "Landlock") || !strings.Contains(got, "mounts") {
		t.Errorf("MissingLayer: got %q", got)
	}
	c.LandlockABI = 1
	if got := c.MissingLayer(); got != "" {
		t.Errorf("with Landlock: MissingLayer %q, want none", got)
	}
}

// TestReportInheritedSeccomp: a filter already on the server (a
// container's) is named, and the sandbox's stacks on it.
func TestReportInheritedSeccomp(t *testing.T) {
	c := Capabilities{OS: "linux", Arch: "amd64", LandlockABI: 7, SeccompInherited: true, Container: "Docker"}
	want := "seccomp       ok    filter with TSYNC, amd64 syscall table; a filter already applies to the server (Docker's), and the sandbox's stacks on it\n"
	if got := c.Report(); !strings.Contains(got, want) {
		t.Errorf("got\n%s\nwant a line\n%s", got, want)
	}
}

func TestMechanisms(t *testing.T) {
	all := policy.Limits{MemoryBytes: 1 << 30, MaxProcesses: 100, MaxFileBytes: 1 << 30, TmpBytes: 1 << 20, CPUTime: time.Minute}
	v1 := Capabilities{Kernel: "6.18.0", CgroupWhy: "this machine has cgroup v1", PidNSMax: true}
	v2 := Capabilities{Kernel: "6.18.0", Cgroup: "/sys/fs/cgroup/user.slice/x", CgroupCPU: true, PidNSMax: true}
	old := Capabilities{Kernel: "6.1.0", CgroupWhy: "this machine has cgroup v1"}
	mac := Capabilities{OS: "darwin", Arch: "arm64", Kernel: "macOS 14.7 (Darwin 23.6.0)"}
	for _, tt := range []struct {
		name    string
		l       policy.Limits
		caps    Capabilities
		uid     int
		want    Mechanisms
		refused string
	}{
		{"user, no cgroup", all, v1, 1000, Mechanisms{Memory: ByRlimit, Processes: ByRlimit, FileSize: ByRlimit, Tmp: ByTmpfs, CPUTime: ByRlimit}, ""},
		{"root, no cgroup", all, v1, 0, Mechanisms{Memory: ByRlimit, Processes: ByPidNamespace, FileSize: ByRlimit, Tmp: ByTmpfs, CPUTime: ByRlimit}, ""},
		{"root, old kernel", all, old, 0, Mechanisms{}, "RLIMIT_NPROC does not bind root"},
		{"root, old kernel, no process limit", policy.Limits{MemoryBytes: 1 << 30}, old, 0, Mechanisms{Memory: ByRlimit}, ""},
		{"delegated cgroup", all, v2, 1000, Mechanisms{Memory: ByCgroup, Processes: ByCgroup, FileSize: ByRlimit, Tmp: ByTmpfs, CPUTime: ByRlimit}, ""},
		{"cpus with cgroup", policy.Limits{CPUs: 1.5}, v2, 0, Mechanisms{CPUs: ByCgroup}, ""},
		{"cpus without cgroup", policy.Limits{CPUs: 1.5}, v1, 1000, Mechanisms{}, "--cpus needs a delegated cgroup v2"},
		{"cpus without the cpu controller", policy.Limits{CPUs: 1}, Capabilities{Cgroup: "/x"}, 1000, Mechanisms{}, "cpu controller"},
		{"nothing asked", policy.Limits{}, v1, 0, Mechanisms{}, ""},
		{"macOS", policy.Limits{MaxProcesses: 100, MaxFileBytes: 1 << 30, CPUTime: time.Minute}, mac, 501,
			Mechanisms{Processes: ByUserRlimit, FileSize: ByRlimit, CPUTime: ByRlimit, Seatbelt: true}, ""},
		{"macOS, nothing asked", policy.Limits{}, mac, 501, Mechanisms{Seatbelt: true}, ""},
		{"macOS memory", policy.Limits{MemoryBytes: 1 << 30}, mac, 501, Mechanisms{}, "--memory cannot be held on macOS"},
		{"macOS tmp size", policy.Limits{TmpBytes: 1 << 20}, mac, 501, Mechanisms{}, "--tmp-size cannot be held on macOS"},
		{"macOS cpus", policy.Limits{CPUs: 1}, mac, 501, Mechanisms{}, "only Linux has"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, r := mechanisms(tt.l, tt.caps, tt.uid)
			if tt.refused != "" {
				if r == nil || !strings.Contains(r.Cause, tt.refused) || r.Fix == "" {
					t.Fatalf("got %+v, %+v; want a refusal about %q with a fix", got, r, tt.refused)
				}
				return
			}
			if r != nil || got != tt.want {
				t.Errorf("got %+v, %v; want %+v", got, r, tt.want)
			}
		})
	}
}

// TestMechanismWords pins each mechanism's value: it is the word messages
// and --check give it, and the word cgroup_linux.go compares with.
func TestMechanismWords(t *testing.T) {
	for _, tt := range []struct {
		m    Mechanism
		want string
	}{{NoLimit, ""}, {ByCgroup, "cgroup"}, {ByRlimit, "rlimit"}, {ByPidNamespace, "pid namespace"}, {ByTmpfs, "tmpfs"}, {ByUserRlimit, "rlimit per user"}} {
		if string(tt.m) != tt.want {
			t.Errorf("got %q, want %q", tt.m, tt.want)
		}
	}
}

func TestKernelAtLeast(t *testing.T) {
	for _, tt := range []struct {
		release string
		want    bool
	}{{"6.14.0", true}, {"6.18.44-fc-v669", true}, {"7.0", true}, {"6.13.9", false}, {"5.15.0-91-generic", false}, {"garbage", false}} {
		if got := kernelAtLeast(tt.release, 6, 14); got != tt.want {
			t.Errorf("kernelAtLeast(%q): got %v, want %v", tt.release, got, tt.want)
		}
	}
}
