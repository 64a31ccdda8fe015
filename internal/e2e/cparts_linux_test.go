package e2e

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/nanosandbox/nanosandbox-mcp/internal/sandbox/sandboxtest"
)

// Where the tests are told the binary holds the helper and exec stage in C
// (NANOSANDBOX_REQUIRE_CSTAGE, .ci/run's step after build.sh), the sandbox
// must run them, not fall back to the Go ones unseen: pid 1 of the sandbox
// has one thread (the Go helper, a Go runtime, has several). Both in a
// one-shot run and in a server's calls, its spare included.
func TestHelperInC(t *testing.T) {
	if os.Getenv("NANOSANDBOX_REQUIRE_CSTAGE") == "" {
		t.Skip("NANOSANDBOX_REQUIRE_CSTAGE is not set: the binary under test may run the Go helper")
	}
	e := newEnv(t)
	const script = `grep '^Threads:' /proc/1/status`
	want := func(t *testing.T, out string) {
		t.Helper()
		if strings.Join(strings.Fields(out), " ") != "Threads: 1" {
			t.Errorf("pid 1 of the sandbox: %q, want one thread (the helper in C)", out)
		}
	}
	t.Run("one-shot", func(t *testing.T) {
		e := e.in(t)
		stdout, stderr, code := e.run(nil, "sh", "-c", script)
		if code != 0 {
			t.Fatalf("exit %d: %s%s", code, stdout, stderr)
		}
		want(t, stdout)
	})
	t.Run("server", func(t *testing.T) {
		e := e.in(t)
		s := e.serve()
		for i := 0; i < 2; i++ { // the first helper, then the spare
			_, out := s.sh(t, script)
			want(t, out.Stdout)
		}
	})
}

// TestLauncherHoldsNothing: the launcher of a helper in C (the server's
// child, outside the sandbox's namespaces) keeps none of the call's
// descriptors, its stdio, spec, reports, proxy socket or memfds: one pipe,
// whose end tells the helper it lives. Else it would keep a call's output
// open past the sandbox, or hand a later process what the call had.
func TestLauncherHoldsNothing(t *testing.T) {
	if os.Getenv("NANOSANDBOX_REQUIRE_CSTAGE") == "" {
		t.Skip("NANOSANDBOX_REQUIRE_CSTAGE is not set: the binary under test may run the Go helper, which has no launcher")
	}
	if os.Getuid() != 0 {
		t.Skip("the launcher is not dumpable: only root may list its descriptors")
	}
	e := newEnv(t)
	s := e.serve()
	s.sleepingCall(t)
	server := s.cmd.Process.Pid
	launchers := 0
	for _, pid := range sandboxtest.Descendants(server) {
		if pp, _, ok := sandboxtest.Stat(pid); !ok || pp != server || cmdline(pid) != "nanosandbox-mcp: sandbox" {
			continue
		}
		launchers++
		fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		if err != nil {
			t.Fatal(err)
		}
		var links []string
		for _, fd := range fds {
			l, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
			links = append(links, fd.Name()+" -> "+l)
		}
		if len(links) != 1 || !strings.Contains(links[0], "pipe:") {
			t.Errorf("launcher %d holds %v, want one pipe", pid, links)
		}
	}
	if launchers == 0 {
		t.Fatal("no launcher below the server")
	}
}
