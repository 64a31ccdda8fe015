package e2e

import (
	"os"
	"strings"
	"testing"
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
