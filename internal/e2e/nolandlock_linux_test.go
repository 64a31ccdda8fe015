package e2e

import (
	"strings"
	"testing"
)

// TestWithoutLandlock runs the escape suite against a build with Landlock
// switched off (-tags nanosandbox_nolandlock), which probes as a kernel
// without it: the mounts hold every row on their own (DESIGN.md §2.3: a
// missing defence-in-depth layer is not a refusal), and --check and the
// tool's description say which layer is missing. What Landlock alone
// holds is refused: --host-network, whose host abstract sockets only its
// scoping keeps commands from.
func TestWithoutLandlock(t *testing.T) {
	if noLandlockBin == "" {
		t.Skip("binaries were given (NANOSANDBOX_BIN) without NANOSANDBOX_NOLANDLOCK_BIN")
	}
	static := serverBin
	serverBin = noLandlockBin
	t.Cleanup(func() { serverBin = static })

	t.Run("check and description say it", func(t *testing.T) {
		e := newEnv(t)
		out, errOut, code := e.runRaw("--check", "--workspace", e.ws)
		for _, want := range []string{
			"landlock      MISSING switched off in this test build (-tags nanosandbox_nolandlock); the mounts hold the filesystem policy without this second layer\n",
			"Landlock is unavailable on this machine: the sandbox's mounts alone keep commands to the paths above",
			"verdict       ok: the policy holds",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("--check lacks %q: exit %d\n%s%s", want, code, out, errOut)
			}
		}
		if code != 0 {
			t.Errorf("--check: exit %d, want 0", code)
		}
		if d := description(t, e.serve()); !strings.Contains(d, "Landlock, the second layer under them, is missing") {
			t.Errorf("the tool's description does not say Landlock is missing:\n%s", d)
		}
	})
	t.Run("without namespaces refused", func(t *testing.T) {
		// Landlock takes the mounts' place there: nothing is left to
		// hold the filesystem policy.
		e := newEnv(t)
		_, errOut, code := e.run(reducedFlags, "true")
		if code != 1 || !strings.Contains(errOut, "error: --without-namespaces needs Landlock, which keeps commands to their paths in place of the mounts: switched off in this test build") ||
			!strings.Contains(errOut, "hint: use Linux 5.13 or newer with Landlock enabled") {
			t.Errorf("--without-namespaces: exit %d %q, want refused (exit 1) for want of Landlock", code, errOut)
		}
	})
	t.Run("host network refused", func(t *testing.T) {
		e := newEnv(t)
		_, errOut, code := e.run([]string{"--host-network"}, "true")
		if code != 1 || !strings.Contains(errOut, "error: --host-network shares the host's network namespace") || !strings.Contains(errOut, "this kernel has ABI 0") {
			t.Errorf("--host-network: exit %d %q, want refused (exit 1) for want of Landlock ABI 6", code, errOut)
		}
	})
	for _, row := range []struct {
		name string
		test func(*testing.T)
	}{
		{"TestEscapeWriteWorkspaceAndTmp", TestEscapeWriteWorkspaceAndTmp},
		{"TestEscapeWriteOutside", TestEscapeWriteOutside},
		{"TestEscapeHomeWrites", TestEscapeHomeWrites},
		{"TestEscapeCredentials", TestEscapeCredentials},
		{"TestEscapeReadAllowed", TestEscapeReadAllowed},
		{"TestEscapeReadOnlyCarveOut", TestEscapeReadOnlyCarveOut},
		{"TestEscapeGitProtected", TestEscapeGitProtected},
		{"TestEscapeGitCommit", TestEscapeGitCommit},
		{"TestEscapeGitSymlinkedDirs", TestEscapeGitSymlinkedDirs},
		{"TestEscapeGitPlanted", TestEscapeGitPlanted},
		{"TestEscapeGitRedirectRevealsNothing", TestEscapeGitRedirectRevealsNothing},
		{"TestEscapeGitHostileFiles", TestEscapeGitHostileFiles},
		{"TestEscapeGitServerKilledMidCall", TestEscapeGitServerKilledMidCall},
		{"TestEscapeGitConcurrentCalls", TestEscapeGitConcurrentCalls},
		{"TestEscapeDaemon", TestEscapeDaemon},
		{"TestEscapeHostProcess", TestEscapeHostProcess},
		{"TestEscapeProcOne", TestEscapeProcOne},
		{"TestEscapeSignalsAtHelper", TestEscapeSignalsAtHelper},
		{"TestEscapeEnvironment", TestEscapeEnvironment},
		{"TestEscapeInheritedDescriptors", TestEscapeInheritedDescriptors},
		{"TestEscapeProcSys", TestEscapeProcSys},
		{"TestEscapeRootOnlyFiles", TestEscapeRootOnlyFiles},
		{"TestEscapeSetuidBits", TestEscapeSetuidBits},
		{"TestEscapeSetuidTools", TestEscapeSetuidTools},
		{"TestEscapeSyscalls", TestEscapeSyscalls},
		{"TestEscapeRefusedSyscalls", TestEscapeRefusedSyscalls},
		{"TestEscapeInt80", TestEscapeInt80},
		{"TestEscapeNetwork", TestEscapeNetwork},
		{"TestHiddenThroughOtherMounts", TestHiddenThroughOtherMounts},
	} {
		t.Run(row.name, row.test)
	}
}
