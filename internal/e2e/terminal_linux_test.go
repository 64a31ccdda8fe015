package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal pair: the master, which the test reads,
// and the terminal the one-shot command gets as its stdio.
func openPTY(t *testing.T) (master, term *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("ptsname: %v", err)
	}
	term, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { term.Close() })
	return master, term
}

// termState is what stty changes: modes and control characters.
func termState(t *testing.T, f *os.File) unix.Termios {
	t.Helper()
	tio, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	return *tio
}

// TestOneShotRestoresTerminal: whatever a one-shot command does to the
// terminal's modes with stty, the terminal is as it was once it ends:
// exited, timed out, or interrupted.
func TestOneShotRestoresTerminal(t *testing.T) {
	e := newEnv(t)
	for _, tt := range []struct {
		name   string
		flags  []string
		script string
		signal bool // interrupt it once it has changed the modes
	}{
		{"exits", nil, "stty raw -echo -icanon min 0 intr ^A; stty -a; exit 3", false},
		{"times out", []string{"--timeout", "2s"}, "stty raw -echo; stty -a; sleep 30", false},
		{"interrupted", nil, "trap '' INT; stty raw -echo isig; stty -a; sleep 30", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			master, term := openPTY(t)
			before := termState(t, term)
			args := append(append([]string{"--workspace", e.ws}, tt.flags...), "--", "sh", "-c", tt.script)
			cmd := exec.Command(serverBin, args...)
			cmd.Env, cmd.Dir = e.vars, e.ws
			cmd.Stdin, cmd.Stdout, cmd.Stderr = term, term, term
			var mu sync.Mutex
			var out bytes.Buffer
			go func() {
				b := make([]byte, 4096)
				for {
					n, err := master.Read(b)
					mu.Lock()
					out.Write(b[:n])
					mu.Unlock()
					if err != nil {
						return
					}
				}
			}()
			seen := func() string {
				mu.Lock()
				defer mu.Unlock()
				return out.String()
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() { cmd.Wait(); close(done) }()
			if tt.signal {
				waitFor(t, func() bool { return strings.Contains(seen(), "-echo") })
				cmd.Process.Signal(syscall.SIGINT)
				time.Sleep(200 * time.Millisecond)
				cmd.Process.Signal(syscall.SIGTERM)
			}
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("the one-shot command did not end; output: %q", seen())
			}
			if !strings.Contains(seen(), "-echo") {
				t.Fatalf("the command did not change the terminal (the test proves nothing); output: %q", seen())
			}
			after := termState(t, term)
			if after != before {
				t.Errorf("the terminal's modes changed:\nbefore %+v\nafter  %+v", before, after)
			}
		})
	}
}
