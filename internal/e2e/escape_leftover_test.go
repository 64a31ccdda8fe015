package e2e

import (
	"os/exec"
	"strings"
	"testing"
)

// TestEscapeNothingCarriesOverCalls: what one call leaves in the sandbox's
// own kernel objects and private directories never reaches the next, also
// when the next runs in the helper the server started ahead of it (from a
// red-team run).
func TestEscapeNothingCarriesOverCalls(t *testing.T) {
	linuxOnly(t, "private /tmp, /dev/shm and IPC namespace per call")
	if _, err := exec.LookPath("ipcmk"); err != nil {
		t.Skip("needs ipcmk (util-linux) to make System V objects")
	}
	e := newEnv(t)
	s := e.serve()
	// Two rounds, so the second call of each runs in the spare helper
	// started after the first.
	for round := 0; round < 2; round++ {
		_, out := s.sh(t, `echo left > /tmp/left-tmp && echo left > /dev/shm/left-shm && echo left > /var/tmp/left-vtmp &&
			mkdir -p /run/left-run && ipcmk -M 4096 >/dev/null && ipcmk -Q >/dev/null && ipcmk -S 1 >/dev/null &&
			echo planted`)
		if !strings.Contains(out.Stdout, "planted") {
			t.Fatalf("round %d: the first call could not plant: %+v", round, out)
		}
		_, out = s.sh(t, `ls -A /tmp /dev/shm /var/tmp /run | grep left; echo "sysv: $(ipcs -m -q -s | grep -c '^0x')"`)
		if strings.Contains(out.Stdout, "left") {
			t.Errorf("round %d: a file of the previous call is visible: %q", round, out.Stdout)
		}
		if !strings.Contains(out.Stdout, "sysv: 0\n") {
			t.Errorf("round %d: System V objects of the previous call are visible: %q (%q)", round, out.Stdout, out.Stderr)
		}
	}
}
