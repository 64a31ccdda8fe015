package e2e

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The system call and network rows of DESIGN.md §7, made by the attack
// helper from inside the sandbox.

// onHost runs the attack helper on the host, outside any sandbox, to show
// that an attempt works there and so means something inside.
func onHost(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command(attackBin, args...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func TestEscapeSyscalls(t *testing.T) {
	linuxOnly(t, "Linux's system calls and the seccomp filter")
	e := newEnv(t)
	if out, err := onHost(t, "tiocsti"); err != nil {
		t.Logf("TIOCSTI on the host, outside the sandbox: %s (%v)", out, err)
	}
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"ptrace traceme", []string{"ptrace-traceme"}},
		{"ptrace attach pid 1", []string{"ptrace-attach", "1"}},
		{"TIOCSTI", []string{"tiocsti"}},
		{"TIOCSTI high bits", []string{"tiocsti-high"}},
		{"mount tmpfs on the workspace", []string{"mount-tmpfs", e.ws}},
		{"mount tmpfs on /etc", []string{"mount-tmpfs", "/etc"}},
		{"umount the workspace", []string{"umount", e.ws}},
		{"umount /proc", []string{"umount", "/proc"}},
		{"umount /dev", []string{"umount", "/dev"}},
		{"umount /", []string{"umount", "/"}},
		{"umount the hidden home", []string{"umount", e.home}},
		{"umount /etc/shadow", []string{"umount", "/etc/shadow"}},
		{"remount / read-write", []string{"remount-rw", "/"}},
		{"remount the .git placeholder read-write", []string{"remount-rw", filepath.Join(e.ws, ".git")}},
		{"fsopen", []string{"fsopen"}},
		{"open_tree", []string{"open-tree", e.ws}},
		{"unshare user", []string{"unshare-user"}},
		{"unshare net", []string{"unshare-net"}},
		{"unshare mount", []string{"unshare-mount"}},
		{"chroot /", []string{"chroot", "/"}},
		{"chroot the workspace", []string{"chroot", e.ws}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e.in(t).wantDenied(nil, tt.args...)
		})
	}
	t.Run("ptrace a sibling", func(t *testing.T) {
		e := e.in(t)
		out, stderr, code := e.run(nil, "sh", "-c", `sleep 10 & `+e.attackPath()+` ptrace-attach $!; r=$?; kill $!; exit $r`)
		if code != 3 || !strings.HasPrefix(out, "denied:") {
			t.Errorf("ptrace-attach a sibling: exit %d %q %s, want denied (exit 3)", code, out, stderr)
		}
	})
	t.Run("unshare(1)", func(t *testing.T) {
		if _, err := os.Stat("/usr/bin/unshare"); err != nil {
			t.Skip("no /usr/bin/unshare on this machine")
		}
		e := e.in(t)
		e.mustDeny(nil, `unshare -Ur id`)
		e.mustDeny(nil, `unshare -Urm sh -c 'mount -t tmpfs none `+e.ws+` && echo mounted'`)
	})
}

// TestEscapeRefusedSyscalls makes the system calls that Docker's default
// profile refuses and the sandbox refuses too, though the kernel lets an
// unprivileged process make them: each must fail with EPERM inside, where on
// the host it succeeds or fails otherwise.
func TestEscapeRefusedSyscalls(t *testing.T) {
	linuxOnly(t, "the seccomp filter")
	e := newEnv(t)
	names, err := onHost(t, "syscalls")
	if err != nil {
		t.Fatalf("attack syscalls: %s, %v", names, err)
	}
	for _, name := range strings.Fields(names) {
		t.Run(name, func(t *testing.T) {
			host, _ := onHost(t, "syscall", name)
			out, code := e.in(t).attack(nil, "syscall", name)
			if code != 3 || out != "denied: operation not permitted" {
				t.Errorf("%s: exit %d %q, want denied: operation not permitted (exit 3); on the host: %q", name, code, out, host)
			}
			if host == out {
				t.Logf("%s fails with EPERM on the host too, as uid %d: only the filter's unit test tells the two apart", name, os.Getuid())
			}
		})
	}
}

func TestEscapeInt80(t *testing.T) {
	linuxOnly(t, "Linux's i386 system call entry")
	if runtime.GOARCH != "amd64" {
		t.Skipf("the i386 int $0x80 entry exists only on amd64, not %s", runtime.GOARCH)
	}
	if out, err := onHost(t, "int80"); err != nil || out != "ok" {
		t.Skipf("this kernel has no i386 syscall entry (IA32 emulation off): int $0x80 on the host gave %q, %v", out, err)
	}
	e := newEnv(t)
	out, stderr, code := e.run(nil, e.attackPath(), "int80")
	if code != 128+31 {
		t.Errorf("int $0x80 getpid: exit %d %q %s, want killed by SIGSYS (exit %d)", code, out, stderr, 128+31)
	}
}

// listen accepts and counts connections until the test ends.
func listen(t *testing.T, network, addr string) (net.Listener, *atomic.Int32) {
	t.Helper()
	l, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var n atomic.Int32
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			c.Close()
		}
	}()
	return l, &n
}

func TestEscapeNetwork(t *testing.T) {
	e := newEnv(t)
	for _, tt := range []struct {
		name    string
		network string
		addr    func(t *testing.T) string
		attack  string
	}{
		{"TCP to host loopback", "tcp", func(*testing.T) string { return "127.0.0.1:0" }, "tcp-connect"},
		{"TCP to a host address", "tcp", func(t *testing.T) string { return hostAddress(t) + ":0" }, "tcp-connect"},
		{"abstract unix socket", "unix", func(t *testing.T) string { return "@nsb-escape-" + uniqueMarker(t) }, "abstract-connect"},
		{"unix socket in home", "unix", func(t *testing.T) string { return filepath.Join(e.home, "agent.sock") }, "unix-connect"},
		{"unix socket in host tmp", "unix", func(t *testing.T) string {
			dir, err := os.MkdirTemp("/tmp", "nsb-sock-")
			if err != nil {
				t.Fatal(err)
			}
			os.Chmod(dir, 0o755)
			t.Cleanup(func() { os.RemoveAll(dir) })
			return filepath.Join(dir, "s.sock")
		}, "unix-connect"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.attack == "abstract-connect" {
				linuxOnly(t, "abstract unix sockets")
			}
			e := e.in(t)
			l, n := listen(t, tt.network, tt.addr(t))
			target := l.Addr().String()
			if tt.attack == "abstract-connect" {
				target = strings.TrimPrefix(target, "@")
			}
			if out, err := onHost(t, tt.attack, target); err != nil {
				t.Fatalf("%s %s on the host: %s, %v", tt.attack, target, out, err)
			}
			// The listener counts in its own goroutine: wait for the
			// host's connection to be counted before taking the count.
			for deadline := time.Now().Add(5 * time.Second); n.Load() == 0; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the host's own %s %s was never accepted", tt.attack, target)
				}
			}
			before := n.Load()
			e.wantDenied(nil, tt.attack, target)
			time.Sleep(200 * time.Millisecond) // a connection that got through is counted by then
			if got := n.Load(); got != before {
				t.Errorf("the host listener accepted %d connections from the sandbox", got-before)
			}
		})
	}
	for _, tt := range []struct{ name, attack string }{
		{"MPTCP", "mptcp"},
		{"vsock", "vsock"},
		{"packet", "packet"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			linuxOnly(t, "Linux's socket families")
			e.in(t).wantDenied(nil, tt.attack)
		})
	}
	t.Run("own loopback", func(t *testing.T) {
		e := e.in(t)
		if runtime.GOOS == "darwin" {
			// No network namespace: loopback is the host's, and denied.
			e.wantDenied(nil, "loopback")
			return
		}
		if out, code := e.attack(nil, "loopback"); code != 0 || out != "ok" {
			t.Errorf("listen and connect on the sandbox's loopback: exit %d %q, want ok", code, out)
		}
	})
}

// hostAddress returns a non-loopback IPv4 address of this machine.
func hostAddress(t *testing.T) string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && ipn.IP.To4() != nil {
			return ipn.IP.String()
		}
	}
	t.Skip("this machine has no non-loopback IPv4 address")
	return ""
}
