// Package sandboxtest holds helpers for tests that enforce something: they skip
// with a reason where the machine lacks a kernel feature, and they run
// restrictions in a subprocess, because a restriction cannot be undone.
//
// It imports only the standard library and x/sys, so the sandbox package's own
// tests can use it.
package sandboxtest

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

const childEnv = "_SANDBOXTEST_CHILD"

// Require skips t unless the machine has capability, naming what is missing.
// Capabilities: "linux", "landlock", "userns", "seccomp", "cgroup2", "root",
// "nonroot".
func Require(t testing.TB, capability string) {
	t.Helper()
	if reason := missing(capability); reason != "" {
		t.Skipf("needs %s; %s", capability, reason)
	}
}

// Missing returns why the machine lacks capability, or "" when it has it.
func Missing(capability string) string { return missing(capability) }

func missing(capability string) string {
	switch capability {
	case "linux":
		if runtime.GOOS != "linux" {
			return "this is " + runtime.GOOS
		}
	case "landlock":
		if runtime.GOOS != "linux" {
			return "this is " + runtime.GOOS
		}
		if abi := landlockABI(); abi < 1 {
			return "this kernel has no Landlock (needs Linux 5.13+ with lsm=landlock)"
		}
	case "userns":
		if runtime.GOOS != "linux" {
			return "this is " + runtime.GOOS
		}
		if err := userNamespaces(); err != nil {
			return "unprivileged user namespaces are unavailable: " + err.Error()
		}
	case "seccomp":
		if runtime.GOOS != "linux" {
			return "this is " + runtime.GOOS
		}
		if !seccompAvailable() {
			return "this kernel has no seccomp filter support"
		}
	case "cgroup2":
		if reason := cgroup2Delegated(); reason != "" {
			return reason
		}
	case "root":
		if os.Geteuid() != 0 {
			return "this test runs as root only"
		}
	case "nonroot":
		if os.Geteuid() == 0 {
			return "this test runs as an unprivileged user only"
		}
	default:
		return fmt.Sprintf("unknown capability %q", capability)
	}
	return ""
}

// RunInSubprocess runs the calling test again, alone, in a fresh process of
// the test binary. It returns true inside that process, where the test goes
// on to do what cannot be undone; outside it returns false after the
// subprocess ended, failing t if the subprocess failed or never ran the
// test, and skipping t if the test skipped there (a machine that lacks what
// the test needs must not read as a pass).
func RunInSubprocess(t *testing.T) bool {
	t.Helper()
	if os.Getenv(childEnv) == t.Name() {
		// Said on stdout, the one channel a restricted child surely still
		// has (Landlock may forbid creating a file by now).
		t.Cleanup(func() {
			outcome := "ran"
			if t.Skipped() {
				outcome = "skipped"
			}
			fmt.Printf("\n%s%s %s\n", outcomeMarker, outcome, t.Name())
		})
		return true
	}
	parts := strings.Split(t.Name(), "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	cmd := exec.Command(os.Args[0], "-test.run="+strings.Join(parts, "/"), "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+t.Name())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("subprocess failed: %v\n%s", err, out)
	}
	switch subprocessOutcome(string(out), t.Name()) {
	case "ran":
	case "skipped":
		t.Skipf("skipped in its subprocess:\n%s", out)
	default:
		t.Fatalf("the subprocess did not run %s:\n%s", t.Name(), out)
	}
	return false
}

// outcomeMarker starts the line on which a subprocess says how its test
// ended.
const outcomeMarker = "sandboxtest: subprocess test "

// subprocessOutcome returns how the test named name ended in a subprocess
// whose output is out: "ran", "skipped", or "" if it did not say.
func subprocessOutcome(out, name string) string {
	for _, line := range strings.Split(out, "\n") {
		rest, ok := strings.CutPrefix(line, outcomeMarker)
		if !ok {
			continue
		}
		if outcome, n, ok := strings.Cut(rest, " "); ok && n == name {
			return outcome
		}
	}
	return ""
}
