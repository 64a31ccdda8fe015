package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/nanosandbox/nanosandbox-mcp/internal/sandbox/sandboxtest"
)

func TestLandlockABI(t *testing.T) {
	sandboxtest.Require(t, "landlock")
	if got := landlockABI(); got < 1 {
		t.Errorf("landlockABI(): got %v, want > 0", got)
	}
}

func TestLandlockAccessFor(t *testing.T) {
	const (
		basic = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
			unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR |
			unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
			unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR |
			unix.LANDLOCK_ACCESS_FS_MAKE_REG | unix.LANDLOCK_ACCESS_FS_MAKE_SOCK |
			unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK |
			unix.LANDLOCK_ACCESS_FS_MAKE_SYM
		refer    = unix.LANDLOCK_ACCESS_FS_REFER
		truncate = unix.LANDLOCK_ACCESS_FS_TRUNCATE
		ioctl    = unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
		unixSock = unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX
		ro       = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR
		rw       = unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE
		scopes   = unix.LANDLOCK_SCOPE_SIGNAL | unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
	)
	for _, tt := range []struct {
		abi  int
		want landlockAccess
	}{
		{1, landlockAccess{handledFS: basic, readOnly: ro, writable: basic, devices: rw, rulesetSize: 8}},
		{2, landlockAccess{handledFS: basic | refer, readOnly: ro, writable: basic | refer, devices: rw, rulesetSize: 8}},
		{3, landlockAccess{handledFS: basic | refer | truncate, readOnly: ro, writable: basic | refer | truncate, devices: rw | truncate, rulesetSize: 8}},
		{4, landlockAccess{handledFS: basic | refer | truncate, readOnly: ro, writable: basic | refer | truncate, devices: rw | truncate, rulesetSize: 16}},
		{5, landlockAccess{handledFS: basic | refer | truncate | ioctl, readOnly: ro, writable: basic | refer | truncate | ioctl, devices: rw | truncate | ioctl, rulesetSize: 16}},
		{6, landlockAccess{handledFS: basic | refer | truncate | ioctl, scoped: scopes, readOnly: ro, writable: basic | refer | truncate | ioctl, devices: rw | truncate | ioctl, rulesetSize: 24}},
		{7, landlockAccess{handledFS: basic | refer | truncate | ioctl, scoped: scopes, readOnly: ro, writable: basic | refer | truncate | ioctl, devices: rw | truncate | ioctl, rulesetSize: 24}},
		{8, landlockAccess{handledFS: basic | refer | truncate | ioctl, scoped: scopes, readOnly: ro, writable: basic | refer | truncate | ioctl, devices: rw | truncate | ioctl, rulesetSize: 24}},
		{9, landlockAccess{handledFS: basic | refer | truncate | ioctl | unixSock, scoped: scopes, readOnly: ro, writable: basic | refer | truncate | ioctl | unixSock, devices: rw | truncate | ioctl, rulesetSize: 24}},
		{10, landlockAccess{handledFS: basic | refer | truncate | ioctl | unixSock, scoped: scopes, readOnly: ro, writable: basic | refer | truncate | ioctl | unixSock, devices: rw | truncate | ioctl, rulesetSize: 24}},
	} {
		t.Run(fmt.Sprintf("abi%d", tt.abi), func(t *testing.T) {
			if got := landlockAccessFor(tt.abi); got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestLandlockKernelAcceptsRuleset checks, without restricting anything, that
// this kernel takes the handled rights and ruleset size for its ABI and every
// older one.
func TestLandlockKernelAcceptsRuleset(t *testing.T) {
	sandboxtest.Require(t, "landlock")
	for abi := 1; abi <= landlockABI(); abi++ {
		t.Run(fmt.Sprintf("abi%d", abi), func(t *testing.T) {
			a := landlockAccessFor(abi)
			attr := unix.LandlockRulesetAttr{Handled_access_fs: a.handledFS, Scoped: a.scoped}
			fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), a.rulesetSize, 0)
			if errno != 0 {
				t.Fatalf("landlock_create_ruleset: got %v, want success", errno)
			}
			unix.Close(int(fd))
		})
	}
}

// TestLandlockRestrictErrors checks the refusals. Each case runs on a thread
// of its own that ends with it, so a restriction applied by mistake would not
// leak into the rest of the test binary.
func TestLandlockRestrictErrors(t *testing.T) {
	kernel := landlockABI()
	missing := filepath.Join(t.TempDir(), "missing")
	for _, tt := range []struct {
		name     string
		landlock bool // needs Landlock in this kernel
		abi      int
		rules    landlockRules
		wantErr  string // a substring of the message
		wantIs   error  // or nil
		skip     func() string
	}{
		{name: "abi 0", abi: 0, rules: landlockRules{ReadOnly: []string{"/"}},
			wantErr: "landlock_create_ruleset: Landlock ABI 0", wantIs: unix.EOPNOTSUPP},
		{name: "abi -1", abi: -1, rules: landlockRules{ReadOnly: []string{"/"}},
			wantErr: "landlock_create_ruleset: Landlock ABI -1", wantIs: unix.EOPNOTSUPP},
		{name: "missing path", landlock: true, abi: kernel, rules: landlockRules{ReadOnly: []string{"/"}, Writable: []string{missing}},
			wantErr: fmt.Sprintf("landlock_add_rule %q: open: ", missing), wantIs: unix.ENOENT},
		{name: "missing device", landlock: true, abi: kernel, rules: landlockRules{ReadOnly: []string{"/"}, Devices: []string{missing}},
			wantErr: fmt.Sprintf("landlock_add_rule %q: open: ", missing), wantIs: unix.ENOENT},
		{name: "relative path", landlock: true, abi: kernel, rules: landlockRules{ReadOnly: []string{"etc"}},
			wantErr: `landlock_add_rule "etc": not an absolute path`},
		{name: "empty path", landlock: true, abi: kernel, rules: landlockRules{Writable: []string{""}},
			wantErr: `landlock_add_rule "": not an absolute path`},
		{name: "abi above the kernel's", landlock: true, abi: 9, rules: landlockRules{ReadOnly: []string{"/"}},
			wantErr: "landlock_create_ruleset: ", wantIs: unix.EINVAL,
			skip: func() string {
				if kernel >= 9 {
					return fmt.Sprintf("this kernel has Landlock ABI %d, which knows every right ABI 9 handles", kernel)
				}
				return ""
			}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.landlock {
				sandboxtest.Require(t, "landlock")
			}
			if tt.skip != nil {
				if reason := tt.skip(); reason != "" {
					t.Skip(reason)
				}
			}
			got := onThrowawayThread(func() error { return restrictLandlock(tt.abi, tt.rules) })
			if got == nil || !strings.Contains(got.Error(), tt.wantErr) {
				t.Fatalf("got %v, want an error containing %q", got, tt.wantErr)
			}
			if tt.wantIs != nil && !errors.Is(got, tt.wantIs) {
				t.Errorf("got %v, want %v", got, tt.wantIs)
			}
		})
	}
}

// TestLandlockRestrict enforces a typical policy in a subprocess and tries
// what a command would, from the restricted thread.
func TestLandlockRestrict(t *testing.T) {
	sandboxtest.Require(t, "landlock")
	const socketEnv = "_NANOSANDBOX_TEST_LANDLOCK_SOCKET"
	if os.Getenv(socketEnv) == "" {
		// An abstract unix socket of the parent test process: a host daemon
		// the command must not reach (Landlock ABI 6+).
		name := fmt.Sprintf("@nanosandbox-landlock-test-%d", os.Getpid())
		ln, err := landlockListenUnix(name)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(ln) })
		t.Setenv(socketEnv, name)
	}
	if !sandboxtest.RunInSubprocess(t) {
		return
	}

	abi := landlockABI()
	ws := t.TempDir()      // the workspace: writable
	outside := t.TempDir() // a directory not granted: read-only under "/"
	for _, dir := range []string{"a", "b"} {
		if err := os.Mkdir(filepath.Join(ws, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(ws, "a", "moved"), filepath.Join(ws, "rm"), filepath.Join(outside, "existing")} {
		if err := os.WriteFile(f, []byte("data\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Pathname sockets made before the restriction, as a host daemon would
	// have: one beneath a writable root, one outside (Landlock ABI 9+).
	for _, path := range []string{filepath.Join(ws, "sock"), filepath.Join(outside, "sock")} {
		fd, err := landlockListenUnix(path)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
	}
	// The controls: without Landlock, the parent can be signalled and its
	// abstract socket reached, so a failure below is Landlock's doing.
	parentSocket := os.Getenv(socketEnv)
	if err := unix.Kill(os.Getppid(), 0); err != nil {
		t.Fatalf("before restriction: kill(getppid(), 0): %v", err)
	}
	if err := landlockConnectUnix(parentSocket); err != nil {
		t.Fatalf("before restriction: connect %q: %v", parentSocket, err)
	}

	thread := startLandlockThread(t)
	err := thread.do(func() error {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
		}
		return restrictLandlock(abi, landlockRules{
			ReadOnly: []string{"/"},
			Writable: []string{ws},
			Devices:  []string{"/dev/null"},
		})
	})
	if err != nil {
		t.Fatal(err)
	}

	for _, tt := range []struct {
		name   string
		minABI int // the Landlock ABI the expectation needs
		op     func() error
		want   error // nil, or what errors.Is must match
	}{
		{name: "read /etc/passwd", op: func() error { _, err := os.ReadFile("/etc/passwd"); return err }},
		{name: "list /usr", op: func() error { _, err := os.ReadDir("/usr"); return err }},
		{name: "read outside", op: func() error { _, err := os.ReadFile(filepath.Join(outside, "existing")); return err }},
		{name: "write in workspace", op: func() error { return os.WriteFile(filepath.Join(ws, "new"), []byte("x"), 0o644) }},
		{name: "mkdir in workspace", op: func() error { return os.Mkdir(filepath.Join(ws, "dir"), 0o755) }},
		{name: "symlink in workspace", op: func() error { return os.Symlink("new", filepath.Join(ws, "link")) }},
		{name: "remove in workspace", op: func() error { return os.Remove(filepath.Join(ws, "rm")) }},
		{name: "rename across workspace directories", minABI: 2,
			op: func() error { return os.Rename(filepath.Join(ws, "a", "moved"), filepath.Join(ws, "b", "moved")) }},
		{name: "create outside", op: func() error { return os.WriteFile(filepath.Join(outside, "new"), []byte("x"), 0o644) },
			want: unix.EACCES},
		{name: "open outside for writing",
			op:   func() error { return landlockClose(os.OpenFile(filepath.Join(outside, "existing"), os.O_WRONLY, 0)) },
			want: unix.EACCES},
		{name: "truncate outside", minABI: 3, op: func() error { return unix.Truncate(filepath.Join(outside, "existing"), 0) },
			want: unix.EACCES},
		{name: "mkdir outside", op: func() error { return os.Mkdir(filepath.Join(outside, "dir"), 0o755) },
			want: unix.EACCES},
		{name: "remove outside", op: func() error { return os.Remove(filepath.Join(outside, "existing")) },
			want: unix.EACCES},
		{name: "rename outside file into workspace",
			op:   func() error { return os.Rename(filepath.Join(outside, "existing"), filepath.Join(ws, "stolen")) },
			want: unix.EACCES},
		// A hard link to an outside file would let the workspace's rights
		// reach it; Landlock refuses the link itself (EXDEV: no REFER on the
		// source's directory; below ABI 2 every cross-directory link).
		{name: "hardlink outside file into workspace",
			op:   func() error { return os.Link(filepath.Join(outside, "existing"), filepath.Join(ws, "hardlink")) },
			want: unix.EXDEV},
		{name: "write /dev/null with O_TRUNC", op: func() error {
			f, err := os.OpenFile("/dev/null", os.O_WRONLY|os.O_TRUNC, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = f.WriteString("x")
			return err
		}},
		{name: "read /dev/zero", op: func() error {
			f, err := os.Open("/dev/zero")
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = f.Read(make([]byte, 8))
			return err
		}},
		{name: "write /dev/zero, not a granted device",
			op:   func() error { return landlockClose(os.OpenFile("/dev/zero", os.O_WRONLY, 0)) },
			want: unix.EACCES},
		// Any ioctl will do: the driver answers ENOTTY once Landlock let it
		// through, and Landlock answers EACCES (Landlock ABI 5+).
		{name: "ioctl on /dev/null", op: func() error { return landlockIoctl("/dev/null", os.O_WRONLY) },
			want: unix.ENOTTY},
		{name: "ioctl on /dev/zero, not a granted device", minABI: 5,
			op:   func() error { return landlockIoctl("/dev/zero", os.O_RDONLY) },
			want: unix.EACCES},
		{name: "signal the parent process", minABI: 6, op: func() error { return unix.Kill(os.Getppid(), 0) },
			want: unix.EPERM},
		{name: "connect to the parent's abstract socket", minABI: 6,
			op:   func() error { return landlockConnectUnix(parentSocket) },
			want: unix.EPERM},
		{name: "connect to an abstract socket made inside the domain", op: func() error {
			name := fmt.Sprintf("@nanosandbox-landlock-test-inside-%d", os.Getpid())
			fd, err := landlockListenUnix(name)
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			return landlockConnectUnix(name)
		}},
		{name: "connect to a pathname socket in the workspace",
			op: func() error { return landlockConnectUnix(filepath.Join(ws, "sock")) }},
		{name: "connect to a pathname socket outside", minABI: 9,
			op:   func() error { return landlockConnectUnix(filepath.Join(outside, "sock")) },
			want: unix.EACCES},
		// os/exec forks from the calling thread, so the child inherits its
		// domain: what a command's own children may do.
		{name: "exec cat /etc/passwd", op: func() error { return landlockExec("cat", "/etc/passwd") }},
		{name: "exec sh writing in workspace",
			op: func() error { return landlockExec("sh", "-c", "echo x > \"$1\"", "sh", filepath.Join(ws, "from-sh")) }},
		{name: "exec touch outside", op: func() error { return landlockExec("touch", filepath.Join(outside, "touched")) },
			want: unix.EACCES},
		{name: "exec sh writing outside",
			op: func() error {
				return landlockExec("sh", "-c", "echo x > \"$1\"", "sh", filepath.Join(outside, "from-sh"))
			},
			want: unix.EACCES},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if abi < tt.minABI {
				t.Skipf("needs Landlock ABI %d+; this kernel has %d", tt.minABI, abi)
			}
			got := thread.do(tt.op)
			if tt.want == nil && got != nil || tt.want != nil && !errors.Is(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
	for _, path := range []string{filepath.Join(outside, "new"), filepath.Join(outside, "touched"), filepath.Join(outside, "from-sh")} {
		if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("after the denied writes: lstat %q: got %v, want %v", path, err, os.ErrNotExist)
		}
	}
}

// landlockThread runs functions on one goroutine locked to its OS thread, the
// thread a test restricts. It never unlocks, so the runtime ends the thread
// with the goroutine instead of reusing it restricted.
type landlockThread chan func()

func startLandlockThread(t *testing.T) landlockThread {
	c := make(landlockThread)
	go func() {
		runtime.LockOSThread()
		for f := range c {
			f()
		}
	}()
	t.Cleanup(func() { close(c) })
	return c
}

func (c landlockThread) do(f func() error) error {
	errc := make(chan error, 1)
	c <- func() { errc <- f() }
	return <-errc
}

// onThrowawayThread runs f on an OS thread that ends when f returns.
func onThrowawayThread(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		errc <- f()
	}()
	return <-errc
}

// landlockListenUnix listens on a unix stream socket; a name starting with
// "@" is abstract.
func landlockListenUnix(name string) (int, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: name}); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("bind %q: %w", name, err)
	}
	if err := unix.Listen(fd, 8); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("listen %q: %w", name, err)
	}
	return fd, nil
}

func landlockConnectUnix(name string) error {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.Connect(fd, &unix.SockaddrUnix{Name: name}); err != nil {
		return fmt.Errorf("connect %q: %w", name, err)
	}
	return nil
}

func landlockClose(f *os.File, err error) error {
	if err != nil {
		return err
	}
	return f.Close()
}

// landlockIoctl opens path and asks it TCGETS.
func landlockIoctl(path string, flag int) error {
	f, err := os.OpenFile(path, flag, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err
}

// landlockExec runs a program and maps its "Permission denied" to EACCES.
func landlockExec(name string, args ...string) error {
	path, err := exec.LookPath(name)
	if err != nil {
		return err
	}
	cmd := exec.Command(path, args...)
	cmd.Env = []string{"LC_ALL=C", "PATH=/usr/bin:/bin"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), "Permission denied") {
			return fmt.Errorf("%s: %w: %s", name, unix.EACCES, strings.TrimSpace(string(out)))
		}
		return fmt.Errorf("%s: %v: %s", name, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// TestLandlockListedEntryGone: the sandbox without namespaces grants reads
// entry by entry, listed when the server started. An entry removed since
// grants nothing and fails no call; one replaced by a symlink grants
// nothing either, not what it points to now.
func TestLandlockListedEntryGone(t *testing.T) {
	sandboxtest.Require(t, "landlock")
	if !sandboxtest.RunInSubprocess(t) {
		return
	}
	dir := t.TempDir()
	kept, gone, secret := filepath.Join(dir, "kept"), filepath.Join(dir, "gone"), filepath.Join(dir, "secret")
	swapped := filepath.Join(dir, "swapped")
	for _, d := range []string{kept, gone, secret, swapped} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "f"), []byte(d), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// After the listing: one entry removed, one turned into a symlink to
	// a directory that was never listed.
	if err := os.RemoveAll(gone); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(swapped); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, swapped); err != nil {
		t.Fatal(err)
	}
	thread := startLandlockThread(t)
	err := thread.do(func() error {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return err
		}
		return restrictLandlock(landlockABI(), landlockRules{ReadOnly: []string{kept, gone, swapped}})
	})
	if err != nil {
		t.Fatalf("restrictLandlock with a listed entry gone: %v", err)
	}
	read := func(p string) error {
		return thread.do(func() error { _, err := os.ReadFile(p); return err })
	}
	if err := read(filepath.Join(kept, "f")); err != nil {
		t.Errorf("the entry still there: %v, want it readable", err)
	}
	for _, p := range []string{filepath.Join(secret, "f"), filepath.Join(swapped, "f")} {
		if err := read(p); !errors.Is(err, unix.EACCES) {
			t.Errorf("read %s: %v, want EACCES (a symlink put in a listed entry's place grants nothing)", p, err)
		}
	}
}
