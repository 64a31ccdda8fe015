package sandbox

import (
	"context"
	_ "embed"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
	"github.com/nanosandbox/nanosandbox-mcp/internal/sandbox/cstage"
)

// cHelperFiles returns the memfds of the helper in C and of the C exec
// stage, or skips when they were not built (cstage/build.sh); with
// NANOSANDBOX_REQUIRE_CSTAGE set it fails instead. It skips too where user
// namespaces cannot be made.
func cHelperFiles(t *testing.T) (helper, stage *os.File) {
	t.Helper()
	cStageBlob(t)
	if cstage.HelperBlob(runtime.GOARCH) == nil {
		missingBlob(t, "no helper in C built for this source (run internal/sandbox/cstage/build.sh)")
	}
	probe := exec.Command("/bin/true")
	probe.SysProcAttr = cHelperSysProcAttr(os.Getuid(), os.Getgid(), false)
	if err := probe.Run(); err != nil {
		t.Skipf("needs user namespaces: %v", err)
	}
	helper, stage = cHelperFile(), cStageFile()
	if helper == nil || stage == nil {
		t.Fatal("the blobs are built, and their memfds could not be made")
	}
	return helper, stage
}

// cHelperRun is how one run of the helper in C ended.
type cHelperRun struct {
	reports []report
	stdout  string
	stderr  string
	code    int // the helper's exit status
	// proxyGot is what a connection to the proxy's socket sent, when the
	// test accepted one.
	proxyGot string
}

// cHelperOpts are the ways a test runs the helper in C.
type cHelperOpts struct {
	// accept: the test accepts one connection on the proxy's socket the
	// helper hands over, and reads it to EOF.
	accept bool
	// mutate changes the call's block before it is sent.
	mutate func([]byte) []byte
	// launch changes how the helper launches itself.
	launch func(*launch)
	// late: the call's block is the only one, and the stage starts once
	// the root is built; else a start block comes first, as the server
	// sends it, and the stage starts before the call.
	late bool
}

// runCHelper starts the helper in C as startHelper starts it (the same
// namespaces, maps, session and death signal, from a locked thread), hands
// it the blocks for s, and returns what it reported.
func runCHelper(t *testing.T, s *spec, o cHelperOpts) cHelperRun {
	t.Helper()
	helperMem, stageMem := cHelperFiles(t)
	s.UID, s.GID = os.Getuid(), os.Getgid()
	const stageFD = 6
	start := cHelperStartOps(nil)
	ops, err := cHelperCallOps(s)
	if err != nil {
		t.Fatal(err)
	}
	// With a start block, the helper launches itself into its
	// namespaces, as the server starts it; without (late), the test's
	// fork makes them, as it did before the helper could.
	attr := cHelperSysProcAttr(s.UID, s.GID, s.HostNetwork)
	var startBlock []byte
	if o.late {
		ops, start = append(start, ops...), nil
	} else {
		l, err := takeLaunch(attr)
		if err != nil {
			t.Fatal(err)
		}
		if o.launch != nil {
			o.launch(l)
		}
		if startBlock, err = encodeHelperStart(s.UID, s.GID, start, stageFD, l); err != nil {
			t.Fatal(err)
		}
	}
	block, call, err := encodeHelperBlock(s, start, ops, stageFD, netFD)
	if err != nil {
		t.Fatal(err)
	}
	if o.mutate != nil {
		block = o.mutate(block)
	}
	specR, specW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	repR, repW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	netServer, netHelper, err := netPair()
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr strings.Builder
	// The path names the helper's memfd as the child has it, once its
	// descriptors are in place: the server's own number for it may be
	// another of them by then.
	const helperFD = stageFD + 1
	cmd := &exec.Cmd{
		Path:        "/proc/self/fd/" + strconv.Itoa(helperFD),
		Args:        []string{"nanosandbox-mcp: sandbox"},
		Env:         []string{},
		ExtraFiles:  []*os.File{specR, repW, netHelper, stageMem, helperMem},
		Stdout:      &stdout,
		Stderr:      &stderr,
		SysProcAttr: attr,
		WaitDelay:   waitDelay,
	}
	started := make(chan error, 1)
	exited := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		exited <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	specR.Close()
	repW.Close()
	netHelper.Close()
	var run cHelperRun
	proxyDone := make(chan struct{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	go func() {
		defer close(proxyDone)
		l, err := receiveListener(ctx, netServer)
		if err != nil || !o.accept {
			if l != nil {
				l.Close()
			}
			return
		}
		defer l.Close()
		l.(*net.TCPListener).SetDeadline(time.Now().Add(10 * time.Second))
		c, err := l.Accept()
		if err != nil {
			return
		}
		b, _ := io.ReadAll(c)
		c.Close()
		run.proxyGot = string(b)
	}()
	go func() {
		// Either fails once the helper has refused a block and ended.
		if _, err := specW.Write(startBlock); err == nil {
			specW.Write(block)
		}
		specW.Close()
	}()
	raw, _ := io.ReadAll(repR)
	repR.Close()
	<-exited
	<-proxyDone
	run.code = cmd.ProcessState.ExitCode()
	run.stdout, run.stderr = stdout.String(), stderr.String()
	if len(raw)%reportSize != 0 {
		t.Fatalf("reports of %d bytes, not a multiple of %d", len(raw), reportSize)
	}
	for i := 0; i < len(raw); i += reportSize {
		if r, ok := call.report(decodeCReport(raw[i:])); ok {
			run.reports = append(run.reports, r)
		}
	}
	return run
}

// cHelperSpec is a call in a minimal sandbox: the host's tree read-only,
// a private /tmp (the working directory), Landlock with /tmp writable.
func cHelperSpec(args ...string) *spec {
	return &spec{
		Ops:  []mountOp{{Kind: opTmpfs, Path: "/tmp", Dir: true, Mode: 0o1777, Size: 1 << 20}},
		Dir:  "/tmp",
		Path: "sh",
		Args: append([]string{"-c"}, args...),
		Env:  []string{"PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "LANG=C"},
		Limits: policy.Limits{MemoryBytes: 3 << 30, MaxProcesses: 4000, MaxFileBytes: 1 << 30,
			TmpBytes: 1 << 20},
		Mech:        Mechanisms{Memory: ByRlimit, Processes: ByRlimit, FileSize: ByRlimit, Tmp: ByTmpfs},
		LandlockABI: landlockABI(),
		Landlock: landlockRules{
			ReadOnly: []string{"/"},
			Writable: []string{"/tmp", "/dev/shm"},
			Devices:  []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx", "/dev/pts"},
		},
	}
}

// exitOf returns the exit report among rs, failing on a setup or start
// error.
func exitOf(t *testing.T, run cHelperRun) *exitReport {
	t.Helper()
	var er *exitReport
	for _, r := range run.reports {
		switch {
		case r.Setup != nil:
			t.Fatalf("setup failed: %v (stderr %q)", r.Setup, run.stderr)
		case r.Start != nil:
			t.Fatalf("start failed: %v", r.Start)
		case r.Exit != nil:
			er = r.Exit
		}
	}
	if er == nil {
		t.Fatalf("no exit report: %+v, helper status %d, stderr %q", run.reports, run.code, run.stderr)
	}
	return er
}

// TestCHelperMinimalRoot is the first milestone: the helper in C, in the
// server's namespaces, builds a read-only root with a private /tmp,
// pivots into it, brings up loopback, hands the proxy's socket over,
// starts the C exec stage from its memfd in a nested user namespace, reaps
// the command and reports its exit status.
func TestCHelperMinimalRoot(t *testing.T) {
	bash := "/bin/bash"
	if _, err := os.Stat(bash); err != nil {
		t.Skip("needs /bin/bash for its /dev/tcp")
	}
	s := cHelperSpec(`echo pid $$; id -u; cat /proc/self/uid_map
echo x > /tmp/f && echo tmp-writable
(echo x > /etc/nsb-helper-test) 2>/dev/null || echo etc-read-only
grep -q ' / / .*\bro\b' /proc/self/mountinfo && echo root-read-only
ls /dev | tr '\n' ' '; echo
cat /sys/class/net/lo/flags 2>/dev/null; ip -o link show lo 2>/dev/null | grep -o 'LOOPBACK,UP'
` + bash + ` -c 'echo through-the-proxy > /dev/tcp/127.0.0.1/3128' && echo sent
exit 7`)
	for _, late := range []bool{false, true} {
		t.Run(map[bool]string{false: "stage started before the call", true: "stage started after the root"}[late], func(t *testing.T) {
			checkMinimalRoot(t, s, late)
		})
	}
}

func checkMinimalRoot(t *testing.T, s *spec, late bool) {
	run := runCHelper(t, s, cHelperOpts{accept: true, late: late})
	t.Logf("the command's output:\n%s", run.stdout)
	er := exitOf(t, run)
	if er.Code != 7 || er.Signal != 0 || er.TimedOut || er.Limit != nil {
		t.Errorf("exit %+v, want status 7", er)
	}
	if len(run.reports) < 3 || !run.reports[0].Took || !run.reports[1].Ready {
		t.Errorf("reports %+v, want Took, Ready, then Exit", run.reports)
	}
	uid := strconv.Itoa(os.Getuid())
	for _, want := range []string{
		"pid 2\n", "\n" + uid + "\n", "tmp-writable", "etc-read-only", "root-read-only",
		"LOOPBACK,UP", "sent", "null", "ptmx", "pts", "shm",
	} {
		if !strings.Contains(run.stdout, want) {
			t.Errorf("output lacks %q:\n%s\nstderr: %s", want, run.stdout, run.stderr)
		}
	}
	if !regexp.MustCompile(`(?m)^\s*` + uid + `\s+0\s+1$`).MatchString(run.stdout) {
		t.Errorf("the command's uid map is not the caller's (%s 0 1):\n%s", uid, run.stdout)
	}
	if run.proxyGot != "through-the-proxy\n" {
		t.Errorf("the proxy's socket got %q, want the command's line", run.proxyGot)
	}
	if _, err := os.Stat("/etc/nsb-helper-test"); err == nil {
		os.Remove("/etc/nsb-helper-test")
		t.Error("the command wrote the host's /etc")
	}
}

// TestCHelperMakesMountPoints checks that the helper makes a missing mount
// point in a tree the sandbox owns, as makeMountPoint does, and seals a
// hidden tree read-only once its mounts are in.
func TestCHelperMakesMountPoints(t *testing.T) {
	host := t.TempDir()
	if err := os.WriteFile(host+"/marker", []byte("from the host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(host, 0o755); err != nil {
		t.Fatal(err)
	}
	s := cHelperSpec(`cat /tmp/made/deeper/marker
ls -ld /run/hidden/x >/dev/null && echo made-in-hidden
(touch /run/hidden/y) 2>/dev/null || echo hidden-read-only
exit 0`)
	s.Ops = append(s.Ops,
		mountOp{Kind: opTmpfs, Path: "/run", Dir: true, Mode: 0o755, Size: 1 << 20},
		mountOp{Kind: opHide, Path: "/run/hidden", Dir: true, Mode: 0o755, Make: true},
		mountOp{Kind: opBindRO, Path: "/tmp/made/deeper", Src: host, Dir: true, Make: true},
		mountOp{Kind: opHide, Path: "/run/hidden/x", Dir: true, Mode: 0o700, Make: true},
	)
	sortOps(s.Ops)
	run := runCHelper(t, s, cHelperOpts{})
	if er := exitOf(t, run); er.Code != 0 {
		t.Errorf("exit %+v, want 0; stderr %q", er, run.stderr)
	}
	for _, want := range []string{"from the host", "made-in-hidden", "hidden-read-only"} {
		if !strings.Contains(run.stdout, want) {
			t.Errorf("output lacks %q:\n%s\nstderr: %s", want, run.stdout, run.stderr)
		}
	}
}

// TestCHelperTimeout checks that the helper ends the call at its timeout,
// and says so, and that a full tmpfs is named as the limit.
func TestCHelperTimeout(t *testing.T) {
	s := cHelperSpec(`head -c 2000000 /dev/zero > /tmp/big; sleep 30`)
	s.Timeout = 300 * time.Millisecond
	began := time.Now()
	run := runCHelper(t, s, cHelperOpts{})
	er := exitOf(t, run)
	if took := time.Since(began); took > 10*time.Second {
		t.Errorf("took %v", took)
	}
	if !er.TimedOut || er.Signal != int(unix.SIGKILL) {
		t.Errorf("exit %+v, want timed out, SIGKILL", er)
	}
	if er.Limit == nil || er.Limit.Kind != tmpLimit || er.Limit.Dir != "/tmp" {
		t.Errorf("limit %+v, want /tmp's size", er.Limit)
	}
}

// TestCHelperCountsTasks checks that the helper counts the command's tasks
// where the process limit reports nothing itself, and that the server
// names the limit from its count.
func TestCHelperCountsTasks(t *testing.T) {
	s := cHelperSpec(`i=0; while [ $i -lt 60 ]; do sleep 3 & i=$((i+1)); done 2>/dev/null; sleep 0.2; exit 1`)
	s.Limits.MaxProcesses = 50
	run := runCHelper(t, s, cHelperOpts{})
	er := exitOf(t, run)
	// As root RLIMIT_NPROC binds nothing and the shell exits 1; as
	// another user its fork fails first (dash: status 2).
	if er.Code == 0 || er.Limit == nil || er.Limit.Kind != processLimit || er.Limit.Mech != ByRlimit {
		t.Errorf("exit %+v, limit %+v; want a failure and the process limit", er, er.Limit)
	}
	s = cHelperSpec(`sleep 0.1; exit 1`)
	s.Limits.MaxProcesses = 50
	if er := exitOf(t, runCHelper(t, s, cHelperOpts{})); er.Limit != nil {
		t.Errorf("limit %+v for a command far below it, want none", er.Limit)
	}
}

// TestCHelperStartError checks that the stage's reports reach the server
// through the helper in C, as the Go stage's would.
func TestCHelperStartError(t *testing.T) {
	s := cHelperSpec()
	s.Path, s.Args = "no-such-program-anywhere", nil
	run := runCHelper(t, s, cHelperOpts{})
	var start *StartError
	for _, r := range run.reports {
		if r.Start != nil {
			start = r.Start
		}
	}
	if start == nil || !start.NotFound {
		t.Fatalf("reports %+v, want a not-found start error", run.reports)
	}
	if want := notInPath(s.Path); start.Error() != want.Error() {
		t.Errorf("got %q, want %q", start.Error(), want.Error())
	}
}

// TestCHelperSetupErrors checks the helper's own failures and their
// messages, the Go helper's.
func TestCHelperSetupErrors(t *testing.T) {
	for _, tt := range []struct {
		name   string
		change func(*spec)
		mutate func([]byte) []byte
		want   string
	}{
		{"bind of a missing path", func(s *spec) {
			s.Ops = append(s.Ops, mountOp{Kind: opBindRO, Path: "/etc", Src: "/no/such/dir", Dir: true})
		}, nil, `sandbox setup failed: bind-ro /etc: open /no/such/dir: no such file or directory`},
		{"protect of a missing path", func(s *spec) {
			s.Ops = append(s.Ops, mountOp{Kind: opProtect, Path: "/no/such/file"})
		}, nil, ""},
		{"mask", func(s *spec) {
			s.Ops = append(s.Ops, mountOp{Kind: opMask, Path: "/etc/hostname"})
		}, nil, ""},
		{"bad magic", nil, func(b []byte) []byte {
			binary.NativeEndian.PutUint32(b, 0x1234)
			return b
		}, "sandbox setup failed: helper instructions: bad magic number"},
		{"unknown op", nil, func(b []byte) []byte {
			off := binary.NativeEndian.Uint64(b[7*8:])
			binary.NativeEndian.PutUint64(b[off:], 99)
			return b
		}, "sandbox setup failed: helper instructions: an unknown op"},
		{"op array beyond the block", nil, func(b []byte) []byte {
			binary.NativeEndian.PutUint64(b[6*8:], 1<<40)
			return b
		}, "sandbox setup failed: helper instructions: an offset or count out of range"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := cHelperSpec("cat /etc/hostname; exit 3")
			if tt.change != nil {
				tt.change(s)
			}
			run := runCHelper(t, s, cHelperOpts{mutate: tt.mutate})
			if tt.want == "" {
				if er := exitOf(t, run); er.Code != 3 {
					t.Errorf("exit %+v, want 3", er)
				}
				if tt.name == "mask" && strings.TrimSpace(run.stdout) != "" {
					t.Errorf("the masked file reads %q, want nothing", run.stdout)
				}
				return
			}
			var got string
			for _, r := range run.reports {
				if r.Setup != nil {
					got = r.Setup.Error()
				}
			}
			if !strings.HasPrefix(got, tt.want) {
				t.Errorf("got %q, want it to start %q (reports %+v)", got, tt.want, run.reports)
			}
			if run.code != 255 {
				t.Errorf("helper status %d, want 255", run.code)
			}
		})
	}
}

// TestCHelperLaunchErrors checks the launch's failures: they read as the
// server's fork of a helper's did, and the helper ends without a call.
func TestCHelperLaunchErrors(t *testing.T) {
	for _, tt := range []struct {
		name   string
		launch func(*launch)
		want   string
	}{
		{"namespaces refused", func(l *launch) {
			l.flags |= unix.CLONE_FS // never with CLONE_NEWUSER: EINVAL, as a refusal would be
		}, "sandbox setup failed: create namespaces: cannot create user namespaces: "},
		{"uid map refused", func(l *launch) {
			l.uidMap = "0 0 0\n" // an empty range
		}, "sandbox setup failed: write the sandbox helper's uid_map: invalid argument"},
		{"gid map refused", func(l *launch) {
			l.gidMap = "x\n"
		}, "sandbox setup failed: write the sandbox helper's gid_map: invalid argument"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			run := runCHelper(t, cHelperSpec("echo ran"), cHelperOpts{launch: tt.launch})
			var got string
			for _, r := range run.reports {
				if r.Setup != nil {
					got = r.Setup.Error()
				}
				if r.Took {
					t.Error("the helper took its call")
				}
			}
			if !strings.HasPrefix(got, tt.want) {
				t.Errorf("got %q, want it to start %q (reports %+v)", got, tt.want, run.reports)
			}
			if run.code != 255 || run.stdout != "" {
				t.Errorf("launcher status %d, stdout %q; want 255 and nothing run", run.code, run.stdout)
			}
		})
	}
}

// helperSource is helper.c, held in the test binary: CI runs it from
// another directory, as root and as an unprivileged user.
//
//go:embed cstage/src/helper.c
var helperSource []byte

// TestCHelperNames checks that the Go side names as many of helper.c's
// steps, failures and ops as helper.c has.
func TestCHelperNames(t *testing.T) {
	src := helperSource
	enum := func(first string) []string {
		m := regexp.MustCompile(`(?s)enum \{\s*(` + first + `\b[^}]*)\}`).FindSubmatch(src)
		if m == nil {
			t.Fatalf("no enum starting with %s in helper.c", first)
		}
		body := regexp.MustCompile(`//[^\n]*`).ReplaceAllString(string(m[1]), "")
		var names []string
		for _, f := range strings.Split(body, ",") {
			if name, _, _ := strings.Cut(f, "="); strings.TrimSpace(name) != "" {
				names = append(names, strings.TrimSpace(name))
			}
		}
		return names
	}
	for _, tt := range []struct {
		first string
		got   int
		want  func(n int) int
	}{
		{"S_CALL", len(hsteps), func(n int) int { return n + 1 }}, // from 1
		{"H_BLOCK", len(hfailures), func(n int) int { return n }},
		{"OP_MOUNT", hopBindLink, func(n int) int { return n }},
	} {
		names := enum(tt.first)
		if want := tt.want(len(names)); tt.got != want {
			t.Errorf("%s…: helper.c has %d (%v), the Go side %d, want %d", tt.first, len(names), names, tt.got, want)
		}
	}
	names := enum("H_BLOCK")
	for name, want := range map[string]int{"H_STAGE_ENDED": hStageEnded, "H_LAUNCH": hLaunch} {
		if i := slices.Index(names, name); i < 0 || 100+i != want {
			t.Errorf("%s is not %d: %v", name, want, names)
		}
	}
	if steps := enum("LS_PIPE"); len(steps) != len(hLaunchSteps) || steps[hLaunchClone] != "LS_CLONE" {
		t.Errorf("launch's steps: helper.c has %v, the Go side %v (clone at %d)", steps, hLaunchSteps, hLaunchClone)
	}
}

// TestLimitVerdict checks the rule both helpers name a limit by.
func TestLimitVerdict(t *testing.T) {
	l := policy.Limits{MemoryBytes: 1000, MaxProcesses: 50, MaxFileBytes: 1, CPUTime: time.Second, TmpBytes: 1}
	m := Mechanisms{Memory: ByRlimit, Processes: ByRlimit, FileSize: ByRlimit, CPUTime: ByRlimit, Tmp: ByTmpfs}
	signaled := func(sig unix.Signal) *unix.WaitStatus { ws := unix.WaitStatus(sig); return &ws }
	exited := func(code int) *unix.WaitStatus { ws := unix.WaitStatus(code << 8); return &ws }
	for _, tt := range []struct {
		name    string
		m       Mechanisms
		ws      *unix.WaitStatus
		rss     int64
		peak    int
		full    string
		want    limitKind // 0: none
		wantDir string
	}{
		{"SIGXCPU", m, signaled(unix.SIGXCPU), 0, 0, "", cpuTimeLimit, ""},
		{"a shell's 128+SIGXFSZ", m, exited(128 + int(unix.SIGXFSZ)), 0, 0, "", fileSizeLimit, ""},
		{"SIGXCPU without a CPU limit", Mechanisms{}, signaled(unix.SIGXCPU), 0, 0, "", 0, ""},
		{"tasks at 90%", m, exited(1), 0, 45, "", processLimit, ""},
		{"tasks below 90%", m, exited(1), 0, 44, "", 0, ""},
		{"a full tmpfs on a timeout", m, nil, 0, 0, "/tmp", tmpLimit, "/tmp"},
		{"memory at 75% after a failure", m, exited(1), 750, 0, "", memoryLimit, ""},
		{"memory at half after a failure (a Go heap's arenas mapped ahead)", m, exited(2), 500, 0, "", memoryLimit, ""},
		{"memory below half after a failure", m, exited(1), 499, 0, "", 0, ""},
		{"memory at 75% after a success", m, exited(0), 750, 0, "", 0, ""},
		{"nothing", m, exited(0), 10, 3, "", 0, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := limitVerdict(l, tt.m, tt.ws, tt.rss, tt.peak, tt.full)
			switch {
			case tt.want == 0 && got != nil:
				t.Errorf("got %+v, want none", got)
			case tt.want != 0 && (got == nil || got.Kind != tt.want || got.Dir != tt.wantDir):
				t.Errorf("got %+v, want kind %d dir %q", got, tt.want, tt.wantDir)
			}
		})
	}
}

// runHelper runs the call sp in a helper of a sandbox as the server starts
// and hands it one (startHelper, hand): the helper in C when inC, else
// this binary's in Go. It returns the helper's reports.
func runHelper(t *testing.T, sp *spec, inC bool) []report {
	t.Helper()
	sp.UID, sp.GID = os.Getuid(), os.Getgid()
	s := &linuxSandbox{pol: &policy.Policy{}, uid: sp.UID, gid: sp.GID, cHelper: inC}
	var raw []byte
	var ccall *cHelperCall
	var err error
	if inC {
		raw, ccall, err = s.cHelperBlock(sp)
	} else {
		raw, err = json.Marshal(sp)
	}
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr strings.Builder
	c := &Command{Stdout: &stdout, Stderr: &stderr}
	h, err := s.startHelper(c)
	if err != nil {
		t.Fatal(err)
	}
	defer h.discard()
	h.ccall = ccall
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	h.hand(ctx, raw)
	stdoutDone, stderrDone := h.attach(c)
	select {
	case <-h.exited:
	case <-ctx.Done():
		t.Fatal("the helper did not end")
	}
	waitOutput(stdoutDone, stderrDone)
	return <-h.reports
}

// TestCHelperMessages checks that both helpers describe each failure of
// the mounts in the same words: the same spec failing at one step is run
// in the helper in Go and in the one in C, and what the call's result would
// say is compared, as the server would report it.
func TestCHelperMessages(t *testing.T) {
	cHelperFiles(t) // skips where the helper in C was not built
	// Not below /tmp, which is the call's own tmpfs: the host's tree,
	// as the call sees it too.
	host, err := os.MkdirTemp("/var/tmp", "nsb-messages-")
	if err != nil {
		t.Skipf("needs a directory of the host's outside /tmp: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(host) })
	for _, f := range []string{"file", "dir/inner"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(host, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(host, f), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("dir", filepath.Join(host, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(host, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		ops  []mountOp
		want string // what the message starts with
	}{
		{"the source is missing",
			[]mountOp{{Kind: opBindRO, Path: host + "/dir", Src: host + "/gone", Dir: true}},
			"bind-ro " + host + "/dir: open " + host + "/gone: no such file or directory"},
		{"a symbolic link is the source",
			[]mountOp{{Kind: opBindRW, Path: host + "/dir", Src: host + "/link", Dir: true}},
			"bind-rw " + host + "/dir: " + host + "/link: a symbolic link is in the way"},
		{"a symbolic link is the target",
			[]mountOp{{Kind: opBindRO, Path: host + "/link", Src: host + "/dir", Dir: true}},
			"bind-ro " + host + "/link: " + host + "/link: a symbolic link is in the way"},
		{"the target is missing, in a tree the host owns",
			[]mountOp{{Kind: opBindRO, Path: host + "/none", Src: host + "/dir", Dir: true}},
			"bind-ro " + host + "/none: open " + host + "/none: no such file or directory"},
		{"a file where a directory is to be bound",
			[]mountOp{{Kind: opBindRO, Path: host + "/file", Src: host + "/dir", Dir: true}},
			"bind-ro " + host + "/file: move_mount: invalid argument"},
		{"a file in the way of a mount point to make",
			[]mountOp{{Kind: opTmpfs, Path: "/run", Dir: true, Mode: 0o755, Size: 1 << 20},
				{Kind: opBindRO, Path: "/run/x", Src: host + "/file", Make: true},
				{Kind: opBindRO, Path: "/run/x/y", Src: host + "/dir", Dir: true, Make: true}},
			"bind-ro /run/x/y: mount point /run/x: move aside what is in the way: device or resource busy"},
		{"a mount point to make in the host's tree",
			[]mountOp{{Kind: opHide, Path: host + "/dir/new/deeper", Dir: true, Mode: 0o755, Make: true}},
			"mount tmpfs " + host + "/dir/new/deeper: mkdir " + host + "/dir/new: read-only file system"},
		{"a file mount point to make in the host's tree",
			[]mountOp{{Kind: opBindRO, Path: host + "/dir/new", Src: host + "/file", Make: true}},
			"bind-ro " + host + "/dir/new: create " + host + "/dir/new: read-only file system"},
		{"a tmpfs over a file",
			[]mountOp{{Kind: opTmpfs, Path: host + "/file", Dir: true, Mode: 0o755, Size: 1 << 20}},
			"mount tmpfs " + host + "/file: move_mount: invalid argument"},
		{"a mask over a directory",
			[]mountOp{{Kind: opMask, Path: host + "/dir"}},
			"mask " + host + "/dir: move_mount: invalid argument"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got [2]string
			for i, inC := range []bool{false, true} {
				sp := cHelperSpec("echo ran")
				sp.Ops = append(sp.Ops, tt.ops...)
				sortOps(sp.Ops)
				for _, r := range runHelper(t, sp, inC) {
					switch {
					case r.Setup != nil:
						got[i] = r.Setup.Error()
					case r.Start != nil:
						got[i] = r.Start.Error()
					}
				}
			}
			t.Logf("Go: %s", got[0])
			if got[0] != got[1] {
				t.Errorf("the helpers differ:\n Go: %q\n  C: %q", got[0], got[1])
			}
			if want := "sandbox setup failed: " + tt.want; !strings.HasPrefix(got[0], want) {
				t.Errorf("got %q, want it to start %q", got[0], want)
			}
		})
	}
}

// TestCHelperMovesAside checks that both helpers, making mount points in a
// tree the sandbox owns (here a host directory bound writable, as the
// private home is), move whatever is in the way aside, of any type, and
// report the same moves; the grants are then in place, and what was moved
// aside is kept, a symbolic link not followed.
func TestCHelperMovesAside(t *testing.T) {
	cHelperFiles(t) // skips where the helper in C was not built
	host, err := os.MkdirTemp("/var/tmp", "nsb-moved-")
	if err != nil {
		t.Skipf("needs a directory of the host's outside /tmp: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(host) })
	src, home := host+"/src", host+"/home"
	var got [2][]string
	for i, inC := range []bool{false, true} {
		os.RemoveAll(host)
		for _, d := range []string{src + "/dir", home + "/file/keep", home + "/deep", home + "/elsewhere"} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		for _, f := range []string{src + "/file", src + "/dir/inner", home + "/dir", home + "/deep/x"} {
			if err := os.WriteFile(f, []byte("from "+f+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Symlink("elsewhere", home+"/link"); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mkfifo(home+"/fifo", 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chmod(host, 0o755)
		sp := cHelperSpec(`cat ` + home + `/file ` + home + `/fifo ` + home + `/dir/inner ` + home + `/link/inner ` + home + `/deep/x/y/inner >/dev/null &&
[ -z "$(ls -A ` + home + `/elsewhere)" ] && [ -d ` + home + `/pinned/new ]`)
		sp.Ops = append(sp.Ops,
			mountOp{Kind: opBindRW, Path: home, Src: home, Dir: true},
			mountOp{Kind: opBindRO, Path: home + "/file", Src: src + "/file", Make: true},           // a directory, not empty, where a file goes
			mountOp{Kind: opBindRO, Path: home + "/fifo", Src: src + "/file", Make: true},           // a FIFO where a file goes
			mountOp{Kind: opBindRO, Path: home + "/dir", Src: src + "/dir", Dir: true, Make: true},  // a file where a directory goes
			mountOp{Kind: opBindRO, Path: home + "/link", Src: src + "/dir", Dir: true, Make: true}, // a symbolic link
			mountOp{Kind: opBindRO, Path: home + "/deep/x/y", Src: src + "/dir", Dir: true, Make: true},
			mountOp{Kind: opPin, Path: home + "/pinned", Dir: true, Make: true},
			mountOp{Kind: opHide, Path: home + "/pinned/new", Dir: true, Make: true},
		)
		sortOps(sp.Ops)
		for _, r := range runHelper(t, sp, inC) {
			switch {
			case r.Setup != nil:
				t.Errorf("inC %v: %v", inC, r.Setup)
			case r.Moved != nil:
				got[i] = append(got[i], fmt.Sprintf("%s (%o, dir %v) -> %d", strings.TrimPrefix(r.Moved.Path, home), r.Moved.Mode, r.Moved.Dir, r.Moved.N))
			case r.Exit != nil && r.Exit.Code != 0:
				t.Errorf("inC %v: the command found a grant out of place: exit %d", inC, r.Exit.Code)
			}
		}
		for _, kept := range []struct {
			path string
			mode os.FileMode
		}{{"/file.nanosandbox-moved-1", os.ModeDir}, {"/fifo.nanosandbox-moved-1", os.ModeNamedPipe},
			{"/dir.nanosandbox-moved-1", 0}, {"/link.nanosandbox-moved-1", os.ModeSymlink}, {"/deep/x.nanosandbox-moved-1", 0}} {
			if fi, err := os.Lstat(home + kept.path); err != nil || fi.Mode().Type() != kept.mode {
				t.Errorf("inC %v: %s: %v %v, want kept, of type %v", inC, kept.path, fi, err, kept.mode)
			}
		}
		if b, err := os.ReadFile(home + "/dir.nanosandbox-moved-1"); err != nil || string(b) != "from "+home+"/dir\n" {
			t.Errorf("inC %v: a file moved aside lost its content: %q %v", inC, b, err)
		}
		if fi, err := os.Stat(home + "/file.nanosandbox-moved-1/keep"); err != nil || !fi.IsDir() {
			t.Errorf("inC %v: a directory moved aside lost its content: %v", inC, err)
		}
	}
	want := []string{"/file (40000, dir false) -> 1", "/fifo (10000, dir false) -> 1", "/dir (100000, dir true) -> 1",
		"/link (120000, dir true) -> 1", "/deep/x (100000, dir true) -> 1"}
	for i, name := range []string{"Go", "C"} {
		if diff := cmp.Diff(want, got[i]); diff != "" {
			t.Errorf("%s helper's moves (-want +got):\n%s", name, diff)
		}
	}
}

// TestCHeldUserns checks the helper in C holding a root caller's idmapping
// namespace (cHeldUserns): a tree idmapped through it shows root's files
// as rootCallerID's, as one through the Go child's does; maps the kernel
// refuses come back as the launch's error, and the process ends either
// way.
func TestCHeldUserns(t *testing.T) {
	cHelperFiles(t)
	if os.Getuid() != 0 {
		t.Skip("needs root: only a root caller's idmapping uses it, and only root may map another uid")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	owner := func(t *testing.T, userns *os.File) uint32 {
		t.Helper()
		tree, err := (&rootCaller{userns: userns}).tree(dir)
		if err != nil {
			t.Skipf("this filesystem takes no idmapped mount: %v", err)
		}
		defer tree.Close()
		var st unix.Stat_t
		if err := unix.Fstatat(int(tree.Fd()), "f", &st, 0); err != nil {
			t.Fatal(err)
		}
		return st.Uid
	}
	m := fmt.Sprintf("0 %d 1\n", rootCallerID)
	held, err := cHeldUserns(m, m)
	if err != nil {
		t.Fatalf("cHeldUserns: %v", err)
	}
	defer held.Close()
	goHeld, err := heldUserns(true)
	if err != nil {
		t.Fatalf("heldUserns: %v", err)
	}
	defer goHeld.Close()
	if got, want := owner(t, held), owner(t, goHeld); got != rootCallerID || got != want {
		t.Errorf("root's file shows as uid %d through the C helper's namespace and %d through the Go child's, want %d", got, want, rootCallerID)
	}

	before := heldProcesses(t)
	if f, err := cHeldUserns("0 0 1\n0 1 1\n", m); err == nil {
		f.Close()
		t.Error("overlapping uid maps were taken")
	} else if !strings.Contains(err.Error(), "uid_map") {
		t.Errorf("error %q does not name the uid_map", err)
	}
	if after := heldProcesses(t); after > before {
		t.Errorf("%d processes holding a user namespace left, %d before", after, before)
	}
}

// heldProcesses counts this process's children that are the helper in C
// (whichever thread started them).
func heldProcesses(t *testing.T) int {
	t.Helper()
	tasks, _ := filepath.Glob("/proc/self/task/*/children")
	var pids []string
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		pids = append(pids, strings.Fields(string(b))...)
	}
	n := 0
	for _, pid := range pids {
		if c, _ := os.ReadFile("/proc/" + pid + "/comm"); strings.HasPrefix(string(c), "nsb-sandbox") {
			n++
		}
	}
	return n
}

// TestHelpersSkipAGoneMask: a credential file the plan masks, gone by the
// time the helper mounts (the host renamed it a moment after the plan
// was made), has nothing left to hide: both helpers run the call. It
// failed every call it met, which whoever could rename a file in a home
// could time.
func TestHelpersSkipAGoneMask(t *testing.T) {
	for _, inC := range []bool{false, true} {
		if inC {
			cHelperFiles(t) // skips where the helper in C was not built
		}
		sp := cHelperSpec("echo ran")
		sp.Ops = append(sp.Ops, mountOp{Kind: opMask, Path: "/etc/nanosandbox-no-such-credential"}, mountOp{Kind: opMask, Path: "/no/such/dir/.pypirc"})
		sortOps(sp.Ops)
		for _, r := range runHelper(t, sp, inC) {
			if r.Setup != nil {
				t.Errorf("helper in C %v: %v", inC, r.Setup)
			}
		}
	}
}
