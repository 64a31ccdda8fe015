package e2e

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The server must outlive whatever its commands do to the machine it runs
// on: these tests take away what it needs to start a sandbox while it
// serves, and check that it says so on the call, then goes on.

// serveInUserNS starts the server in a user namespace of its own, as uid
// (and gid) id there, mapped to the host's hostID, through wrap (a command
// that execs the rest, such as prlimit; nil for none): the namespace's
// limits (RLIMIT_NPROC counted there) bound what is made inside it only.
func (e *env) serveInUserNS(id, hostID int, wrap []string, flags ...string) *session {
	e.t.Helper()
	argv := append(append(append([]string(nil), wrap...), serverBin, "--workspace", e.ws), flags...)
	path, err := exec.LookPath(argv[0])
	if err != nil {
		e.t.Skipf("needs %s: %v", argv[0], err)
	}
	cmd := exec.Command(path, argv[1:]...)
	cmd.Env = e.vars
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: id, HostID: hostID, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: id, HostID: hostID, Size: 1}},
		Credential:  &syscall.Credential{Uid: uint32(id), Gid: uint32(id), NoSetGroups: true},
	}
	return e.connect(cmd)
}

// connect starts cmd, a server, and connects a client to it.
func (e *env) connect(cmd *exec.Cmd) *session {
	e.t.Helper()
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "nsb-e2e", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, nil)
	if err != nil {
		e.t.Fatalf("connect: %v\nstderr: %s", err, stderr)
	}
	e.t.Cleanup(func() { cs.Close() })
	return &session{ClientSession: cs, cmd: cmd}
}

// TestSurviveRefusedNamespaces takes away user namespaces from a serving
// server, once its spare helper is ready: the call that gets the spare runs,
// the spare that follows cannot start, and the next call says why instead
// of finding the server gone. Then namespaces come back, and so do calls.
func TestSurviveRefusedNamespaces(t *testing.T) {
	e := newEnv(t)
	s := e.connect(e.wrapped("", "--workspace", e.ws))
	if res, out := s.call(t, map[string]any{"command": "echo", "args": []string{"first"}}); res.IsError || out.Stdout != "first\n" {
		t.Fatalf("first call: %q %+v", text(res), out)
	}
	spareHelpers(t, s)
	setUserNSLimit(t, s, "max_user_namespaces", 0)
	if res, out := s.call(t, map[string]any{"command": "echo", "args": []string{"spare"}}); res.IsError || out.Stdout != "spare\n" {
		t.Errorf("the call given the spare: %q %+v", text(res), out)
	}
	// The spare that follows cannot start; give it the time to try.
	time.Sleep(500 * time.Millisecond)
	res, out := s.call(t, map[string]any{"command": "echo", "args": []string{"refused"}})
	if !res.IsError || !strings.HasPrefix(out.Error, "sandbox setup failed:") || !strings.Contains(out.Error, "max_user_namespaces") {
		t.Errorf("a call without namespaces: got isError=%v %q, want a setup failure naming user.max_user_namespaces", res.IsError, text(res))
	}
	t.Logf("without namespaces: %s", text(res))
	setUserNSLimit(t, s, "max_user_namespaces", 1000)
	for i := range 2 { // one that starts its own helper, one given the new spare
		if res, out := s.call(t, map[string]any{"command": "echo", "args": []string{"back"}}); res.IsError || out.Stdout != "back\n" {
			t.Errorf("call %d once namespaces are back: %q %+v", i, text(res), out)
		}
	}
}

// holdProcesses starts processes until a fork fails, then keeps them for
// secs seconds: the shell that forks them dies at the first failure, and
// the command's own process execs, so it needs no fork.
func holdProcesses(secs int) map[string]any {
	s := strconv.Itoa(secs)
	return map[string]any{"command": "sh", "args": []string{"-c", "(while :; do sleep " + s + " & done) 2>/dev/null; exec sleep " + s}}
}

// TestSurviveProcessLimit runs the server under a low RLIMIT_NPROC, in a
// user namespace of its own so that only its processes count: the
// sandbox's processes count against the caller's limit, and a command that
// takes every process the caller may have would leave the server none.
func TestSurviveProcessLimit(t *testing.T) {
	e := newEnv(t)
	// As the caller, or as an unprivileged uid for root, whom RLIMIT_NPROC
	// does not bind.
	id := os.Getuid()
	if id == 0 {
		id = 4242
		for _, p := range []string{e.home, filepath.Dir(e.home)} {
			os.Chmod(p, 0o755)
		}
		filepath.WalkDir(e.home, func(p string, _ fs.DirEntry, _ error) error { return os.Lchown(p, id, id) })
	}
	const limit = 200
	s := e.serveInUserNS(id, id, []string{"prlimit", "--nproc=" + strconv.Itoa(limit), "--"}, "--timeout", "60s")
	if res, out := s.call(t, map[string]any{"command": "echo", "args": []string{"first"}}); res.IsError || out.Stdout != "first\n" {
		t.Fatalf("first call: %q %+v", text(res), out)
	}

	// One command alone is held below the caller's limit, and says so.
	res, out := s.call(t, holdProcesses(2))
	if !res.IsError || !strings.Contains(out.Error, "process limit") {
		t.Errorf("a command that forks until it cannot: got isError=%v %q, want it stopped by the process limit", res.IsError, text(res))
	}
	t.Logf("one command: %s", strings.SplitN(text(res), "\n", 2)[0])
	if res, out := s.call(t, map[string]any{"command": "echo", "args": []string{"next"}}); res.IsError || out.Stdout != "next\n" {
		t.Errorf("the call after it: %q %+v", text(res), out)
	}

	// Two together take every process the caller may have. A call that
	// was running before them ends meanwhile, and its spare cannot start;
	// one made meanwhile says why it cannot run.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	before := s.callAsync(ctx, map[string]any{"command": "sleep", "args": []string{"3"}})
	time.Sleep(300 * time.Millisecond)
	a := s.callAsync(ctx, holdProcesses(10))
	b := s.callAsync(ctx, holdProcesses(10))
	if r := <-before; r.err != nil {
		t.Fatalf("the call made before them: %v", r.err)
	}
	time.Sleep(500 * time.Millisecond)
	res, out = s.call(t, map[string]any{"command": "echo", "args": []string{"meanwhile"}})
	switch {
	case !res.IsError && out.Stdout == "meanwhile\n":
		t.Logf("a call found a process free meanwhile")
	case !res.IsError || !strings.HasPrefix(out.Error, "sandbox setup failed:") || !strings.Contains(out.Error, "RLIMIT_NPROC"):
		t.Errorf("a call made while no process is left: got isError=%v %q, want a setup failure naming RLIMIT_NPROC", res.IsError, text(res))
	default:
		t.Logf("meanwhile: %s", strings.SplitN(text(res), "\n", 2)[0])
	}
	for _, c := range []<-chan asyncResult{a, b} {
		if r := <-c; r.err != nil {
			t.Fatalf("a command holding processes: %v", r.err)
		}
	}
	for i := range 2 {
		if res, out := s.call(t, map[string]any{"command": "echo", "args": []string{"after"}}); res.IsError || out.Stdout != "after\n" {
			t.Errorf("call %d once the processes are gone: %q %+v", i, text(res), out)
		}
	}
}

// TestSurviveLongReport names a program by a path far longer than a line of
// the helper's report pipe used to be read (64 KiB): the report that it
// could not start must still arrive, as what it is.
func TestSurviveLongReport(t *testing.T) {
	e := newEnv(t)
	long := "./" + strings.Repeat("deep/", 20000) + "prog" // 100 KB: under the 128 KiB of one argv string
	s := e.serve()
	res, out := s.call(t, map[string]any{"command": long})
	if !res.IsError || !strings.HasPrefix(out.Error, "failed to start") || !strings.Contains(out.Error, "file name too long") {
		t.Errorf("a 100 KB program path: got isError=%v %.300q, want failed to start: file name too long", res.IsError, text(res))
	}
	if len(text(res)) > 4096 {
		t.Errorf("the result echoes the whole path: %d bytes of text", len(text(res)))
	}
	if res, out := s.call(t, map[string]any{"command": "echo", "args": []string{"next"}}); res.IsError || out.Stdout != "next\n" {
		t.Errorf("the call after it: %q %+v", text(res), out)
	}
	if _, stderr, code := e.run(nil, long); code != 126 || !strings.Contains(stderr, "file name too long") {
		t.Errorf("one-shot: got exit %d, stderr %.300q; want 126 and file name too long", code, stderr)
	}
}

// TestServerKilledEndsSandbox kills the server during a call, and during a
// one-shot run its command line: every process of the sandbox must end
// with it (the helper dies with whatever started it, a root caller's too,
// whose helper changes its ids, which clears a death signal set before).
func TestServerKilledEndsSandbox(t *testing.T) {
	e := newEnv(t)
	t.Run("server", func(t *testing.T) {
		e := e.in(t)
		s := e.serve()
		m := s.sleepingCall(t)
		s.cmd.Process.Kill()
		waitGone(t, m, 5*time.Second)
	})
	t.Run("one-shot", func(t *testing.T) {
		e := e.in(t)
		m := sleepMarker()
		cmd := e.command(context.Background(), append(e.args(), "--", "sleep", m)...)
		cmd.Dir = e.ws
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer cmd.Wait()
		waitFor(t, func() bool { return len(processesWith(m)) > 0 })
		cmd.Process.Kill()
		waitGone(t, m, 5*time.Second)
	})
}

// sleepingCall starts a call that sleeps for hours and waits until its
// sleep runs; it returns the sleep's marker (sleepMarker). The call ends
// with the test, or with its server.
func (s *session) sleepingCall(t *testing.T) string {
	t.Helper()
	m := sleepMarker()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s.callAsync(ctx, map[string]any{"command": "sleep", "args": []string{m}})
	waitFor(t, func() bool { return len(processesWith(m)) > 0 })
	return m
}
