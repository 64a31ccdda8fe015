package sandbox

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestDiagnoseUserNS names each case in which the sandbox's namespaces are
// unavailable, from the machine's facts, with its fix.
func TestDiagnoseUserNS(t *testing.T) {
	sysctls := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(name string) string { return m[name] }
	}
	eperm := &SetupError{Op: "mount --make-rprivate /", Err: "operation not permitted", Errno: unix.EPERM}
	for _, tt := range []struct {
		name     string
		facts    hostFacts
		err      error
		noCaps   bool
		why, fix []string
		notInFix string
	}{
		{"Ubuntu's AppArmor, no capabilities",
			hostFacts{sysctl: sysctls("kernel.apparmor_restrict_unprivileged_userns", "1", "user.max_user_namespaces", "63000"), exe: "/usr/bin/nanosandbox-mcp"},
			eperm, true,
			[]string{"a mount in a new one fails", "AppArmor restricts unprivileged user namespaces", "Ubuntu 23.10+"},
			[]string{"profile nanosandbox-mcp /usr/bin/nanosandbox-mcp", "apparmor_parser -r", "for the copies npx and uvx", "kernel.apparmor_restrict_unprivileged_userns=0", "--without-namespaces"}, "docker"},
		{"Ubuntu's AppArmor, refused",
			hostFacts{sysctl: sysctls("kernel.apparmor_restrict_unprivileged_userns", "1")},
			unix.EACCES, false,
			[]string{"AppArmor restricts"}, []string{"apparmor_parser", "--without-namespaces"}, ""},
		{"Docker's seccomp",
			hostFacts{sysctl: sysctls("user.max_user_namespaces", "63000"), filtered: true, container: "Docker"},
			unix.EPERM, false,
			[]string{"a seccomp filter applies to the server", "a Docker container"},
			[]string{"--security-opt seccomp=unconfined", "--without-namespaces"}, "apparmor_parser"},
		{"a seccomp filter, no container seen",
			hostFacts{sysctl: sysctls(), filtered: true},
			unix.EPERM, false,
			[]string{"a seccomp filter applies to the server", "a container"},
			[]string{"--security-opt seccomp=unconfined", "Kubernetes", "--without-namespaces"}, ""},
		{"a container's profile, no capabilities",
			hostFacts{sysctl: sysctls(), filtered: true, container: "Podman"},
			eperm, true,
			[]string{"a mount in a new one fails", "a Podman container"},
			[]string{"apparmor=unconfined", "--without-namespaces"}, ""},
		{"a filter on the server, no capabilities",
			hostFacts{sysctl: sysctls(), filtered: true},
			eperm, true,
			[]string{"a mount in a new one fails", "a seccomp filter applies to the server"},
			[]string{"--security-opt", "--without-namespaces"}, ""},
		{"no capabilities, no cause seen",
			hostFacts{sysctl: sysctls()},
			eperm, true,
			[]string{"a security module takes their capabilities away"}, []string{"--without-namespaces"}, ""},
		{"max_user_namespaces is 0",
			hostFacts{sysctl: sysctls("user.max_user_namespaces", "0")},
			unix.ENOSPC, false,
			[]string{"user.max_user_namespaces is 0"}, []string{"sudo sysctl -w user.max_user_namespaces=15000", "/etc/sysctl.d/", "--without-namespaces"}, ""},
		{"a container's limit",
			hostFacts{sysctl: sysctls("user.max_user_namespaces", "2147483647")},
			unix.ENOSPC, false,
			[]string{"as many namespaces exist as a limit allows"}, []string{"raise the limit", "--without-namespaces"}, ""},
		{"Debian's old switch",
			hostFacts{sysctl: sysctls("kernel.unprivileged_userns_clone", "0", "user.max_user_namespaces", "63000")},
			unix.EPERM, false,
			[]string{"kernel.unprivileged_userns_clone is 0"}, []string{"sudo sysctl -w kernel.unprivileged_userns_clone=1", "--without-namespaces"}, ""},
		{"nothing seen",
			hostFacts{sysctl: sysctls("user.max_user_namespaces", "63000")},
			unix.EINVAL, false,
			[]string{"invalid argument"}, []string{"allow unprivileged user namespaces", "--without-namespaces"}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			why, fix := tt.facts.diagnose(tt.err, tt.noCaps)
			for _, w := range tt.why {
				if !strings.Contains(why, w) {
					t.Errorf("why lacks %q:\n%s", w, why)
				}
			}
			for _, w := range tt.fix {
				if !strings.Contains(fix, w) {
					t.Errorf("fix lacks %q:\n%s", w, fix)
				}
			}
			if tt.notInFix != "" && strings.Contains(fix, tt.notInFix) {
				t.Errorf("fix has %q:\n%s", tt.notInFix, fix)
			}
		})
	}
}

// TestNoCapabilities: only the helper's first mount failing for want of
// a capability is explained as namespaces without capabilities.
func TestNoCapabilities(t *testing.T) {
	for _, tt := range []struct {
		se   *SetupError
		want bool
	}{
		{&SetupError{Op: "mount --make-rprivate /", Err: "operation not permitted", Errno: unix.EPERM}, true},
		{&SetupError{Op: "mount --make-rprivate /", Err: "permission denied", Errno: unix.EACCES}, true},
		{&SetupError{Op: "mount --make-rprivate /", Err: "invalid argument", Errno: unix.EINVAL}, false},
		{&SetupError{Op: "mount tmpfs /tmp", Err: "operation not permitted", Errno: unix.EPERM}, false},
	} {
		why, _ := noCapabilities(tt.se)
		if got := why != ""; got != tt.want {
			t.Errorf("%+v: got %v (%q), want %v", tt.se, got, why, tt.want)
		}
	}
	if !errors.Is(&SetupError{Errno: unix.EPERM}, unix.EPERM) {
		t.Errorf("a SetupError's errno is not found by errors.Is")
	}
}

// TestSeccompMode checks that prctl's answer is the kernel's in
// /proc/self/status.
func TestSeccompMode(t *testing.T) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip(err)
	}
	_, after, ok := strings.Cut(string(b), "\nSeccomp:")
	if !ok {
		t.Skip("no Seccomp line in /proc/self/status")
	}
	want, _ := strconv.Atoi(strings.TrimSpace(strings.SplitN(after, "\n", 2)[0]))
	if got := seccompMode(); got != want {
		t.Errorf("seccompMode %d, /proc/self/status says %d", got, want)
	}
}
