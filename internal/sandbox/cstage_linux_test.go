package sandbox

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
	"github.com/nanosandbox/nanosandbox-mcp/internal/sandbox/cstage"
)

// cStageBlob returns the C exec stage for this architecture, or skips when
// none was built (cstage/build.sh); with NANOSANDBOX_REQUIRE_CSTAGE set, as
// in CI after the build, it fails instead.
func cStageBlob(t *testing.T) []byte {
	t.Helper()
	b := cstage.Blob(runtime.GOARCH)
	if b == nil {
		missingBlob(t, "no C exec stage built for this source (run internal/sandbox/cstage/build.sh)")
	}
	return b
}

// missingBlob skips the test, saying why; with NANOSANDBOX_REQUIRE_CSTAGE
// set, as in CI after the build, it fails it instead.
func missingBlob(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("NANOSANDBOX_REQUIRE_CSTAGE") != "" {
		t.Fatalf("NANOSANDBOX_REQUIRE_CSTAGE is set, and there is %s", why)
	}
	t.Skip(why)
}

// cStageRun is one run of the C stage, started directly (no namespace).
type cStageRun struct {
	code    int
	reports []cReport
	stdout  string
	stderr  string
}

// runCStage runs the blob with block on its descriptor 3, and returns how it
// ended and what it reported.
func runCStage(t *testing.T, blob, block []byte) cStageRun {
	t.Helper()
	mem, err := cstage.SealedMemfd("cstage-test", blob)
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	specR, specW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	repR, repW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr strings.Builder
	cmd := &exec.Cmd{
		Path:       "/proc/self/fd/" + strconv.Itoa(int(mem.Fd())),
		Args:       []string{"nanosandbox-mcp: exec"},
		Env:        []string{},
		ExtraFiles: []*os.File{specR, repW},
		Stdout:     &stdout,
		Stderr:     &stderr,
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	specR.Close()
	repW.Close()
	go func() {
		specW.Write(block) // fails once the stage has refused a block and ended
		specW.Close()
	}()
	raw, _ := io.ReadAll(repR)
	repR.Close()
	cmd.Wait()
	run := cStageRun{code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()}
	if len(raw)%reportSize != 0 {
		t.Fatalf("reports of %d bytes, not a multiple of %d", len(raw), reportSize)
	}
	for i := 0; i < len(raw); i += reportSize {
		run.reports = append(run.reports, decodeCReport(raw[i:]))
	}
	return run
}

// testSpec is a call to run directly: a root that is this process's, the
// limits held by rlimits, Landlock with dir writable.
func testSpec(t *testing.T, dir, path string, args ...string) *spec {
	t.Helper()
	root, err := currentRoot()
	if err != nil {
		t.Fatal(err)
	}
	return &spec{
		Dir:  dir,
		Path: path,
		Args: args,
		Env:  []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C"},
		Limits: policy.Limits{MemoryBytes: 3 << 30, MaxProcesses: 4000, MaxFileBytes: 1 << 30,
			CPUTime: 90*time.Second + time.Millisecond},
		Mech:        Mechanisms{Memory: ByRlimit, Processes: ByRlimit, FileSize: ByRlimit, CPUTime: ByRlimit},
		LandlockABI: landlockABI(),
		Landlock: landlockRules{
			ReadOnly: []string{"/"},
			Writable: []string{dir},
			Devices:  []string{"/dev/null"},
		},
		Root: root,
	}
}

func encodeTestBlock(t *testing.T, s *spec) ([]byte, *cStageCall) {
	t.Helper()
	b, call, err := encodeBlock(s)
	if err != nil {
		t.Fatal(err)
	}
	return b, call
}

// TestCStageRestricts checks that each restriction is in force in the
// program the stage runs.
func TestCStageRestricts(t *testing.T) {
	blob := cStageBlob(t)
	dir := t.TempDir()
	outside := t.TempDir()
	s := testSpec(t, dir, "sh", "-c", `cat /proc/self/status /proc/self/limits; ls /proc/self/fd | tr '\n' ' '; echo
echo in > inside && echo wrote inside
echo out > `+outside+`/f && echo wrote outside; exit 0`)
	if s.LandlockABI < 1 {
		t.Skip("needs Landlock; this kernel has none")
	}
	block, _ := encodeTestBlock(t, s)
	run := runCStage(t, blob, block)
	if run.code != 0 || len(run.reports) != 1 || run.reports[0].kind != kindReady {
		t.Fatalf("exit %d, reports %+v, stderr %q; want 0 after one Ready", run.code, run.reports, run.stderr)
	}
	wants := []string{
		"CapInh:\t0000000000000000", "CapPrm:\t0000000000000000", "CapEff:\t0000000000000000",
		"CapAmb:\t0000000000000000", "NoNewPrivs:\t1", "Seccomp:\t2", "wrote inside",
	}
	if os.Getuid() == 0 {
		// Only root empties the bounding set, as the Go stage does: dropping
		// from it takes CAP_SETPCAP, which another caller lost at the
		// stage's exec, and no_new_privs keeps it from gaining any back.
		wants = append(wants, "CapBnd:\t0000000000000000")
	}
	for _, want := range wants {
		if !strings.Contains(run.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, run.stdout)
		}
	}
	for _, l := range []struct{ name, soft, hard string }{
		{"Max data size", "3221225472", "3221225472"},
		{"Max processes", "4000", "4000"},
		{"Max file size", "1073741824", "1073741824"},
		{"Max cpu time", "91", "92"},
		{"Max core file size", "0", "0"},
	} {
		re := regexp.MustCompile(regexp.QuoteMeta(l.name) + `\s+` + l.soft + `\s+` + l.hard + `\s`)
		if !re.MatchString(run.stdout) {
			t.Errorf("limits lack %s %s %s:\n%s", l.name, l.soft, l.hard, run.stdout)
		}
	}
	var nofile unix.Rlimit
	unix.Getrlimit(unix.RLIMIT_NOFILE, &nofile)
	want := strconv.FormatUint(min(nofile.Max, maxOpenFiles), 10)
	if !regexp.MustCompile(`Max open files\s+` + want + `\s+` + want + `\s`).MatchString(run.stdout) {
		t.Errorf("open files not %s:\n%s", want, run.stdout)
	}
	if strings.Contains(run.stdout, "wrote outside") {
		t.Errorf("the command wrote outside its writable path:\n%s", run.stdout)
	}
	if !strings.Contains(run.stderr, "Permission denied") {
		t.Errorf("stderr %q, want Landlock's Permission denied", run.stderr)
	}
	// ls's own directory descriptor is the only one past stdio: nothing
	// of the stage's (its block, its reports, the memfd) reaches the command.
	if !regexp.MustCompile(`(?m)^0 1 2 3 $`).MatchString(run.stdout) {
		t.Errorf("the command holds descriptors besides stdio:\n%s", run.stdout)
	}
}

// TestCStageStartErrors checks that the stage reports a program that
// cannot start as the Go stage does, message for message.
func TestCStageStartErrors(t *testing.T) {
	blob := cStageBlob(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "plain"), []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "adir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "garbage"), []byte("\x00\x01\x02\x03not a program"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, path string
		env        string
		code       int
	}{
		{"missing in PATH", "no-such-program-anywhere", "PATH=/usr/bin:/bin", 127},
		{"empty PATH", "sh", "PATH=", 127},
		{"missing with a slash", "./no-such", "PATH=/usr/bin", 127},
		{"not executable", "./plain", "PATH=/usr/bin", 127},
		{"not executable in PATH", "plain", "PATH=" + dir, 127},
		{"a directory", "./adir", "PATH=/usr/bin", 127},
		{"not a program", "./garbage", "PATH=/usr/bin", 126},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := testSpec(t, dir, tt.path)
			s.Env = []string{tt.env}
			block, call := encodeTestBlock(t, s)
			run := runCStage(t, blob, block)
			if run.code != tt.code {
				t.Errorf("exit %d, want %d", run.code, tt.code)
			}
			if len(run.reports) != 2 || run.reports[0].kind != kindReady || run.reports[1].kind != kindStart {
				t.Fatalf("reports %+v, want Ready then Start", run.reports)
			}
			got := call.startError(run.reports[1])
			want := goStageStartError(t, dir, tt.path, tt.env)
			if got.Error() != want.Error() || got.NotFound != want.NotFound || got.Errno != want.Errno {
				t.Errorf("got %+v, want %+v (the Go stage's)", got, want)
			}
		})
	}
}

// goStageStartError is what the Go stage reports for path, run from dir
// with env: lookPath's error, or else execve's.
func goStageStartError(t *testing.T, dir, path, env string) *StartError {
	t.Helper()
	pathEnv := strings.TrimPrefix(env, "PATH=")
	wd, _ := os.Getwd()
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	p, serr := lookPath(path, pathEnv)
	if serr != nil {
		return serr
	}
	// execve's own error, without replacing this process: the kernel
	// checks the format before the point of no return, in a child.
	cmd := exec.Command(p)
	cmd.Dir = dir
	err := cmd.Run()
	var errno unix.Errno
	if !errors.As(err, &errno) {
		t.Fatalf("running %s: %v, want an errno", p, err)
	}
	return startError(path, errno)
}

// TestCStageRefusesBadBlocks checks that a malformed block is refused with
// a report, never run.
func TestCStageRefusesBadBlocks(t *testing.T) {
	blob := cStageBlob(t)
	dir := t.TempDir()
	good, _ := encodeTestBlock(t, testSpec(t, dir, "true"))
	ne := binary.NativeEndian
	set := func(b []byte, word int, v uint64) []byte {
		b = append([]byte(nil), b...)
		ne.PutUint64(b[8*word:], v)
		return b
	}
	for _, tt := range []struct {
		name  string
		block []byte
		why   uint32 // 0: no report at all
	}{
		{"empty", nil, 0},
		{"short header", good[:100], 1},
		{"magic", set(good, 0, 0x1234|uint64(cstage.Protocol)<<32), 2},
		{"version", set(good, 0, blockMagic|uint64(cstage.Protocol+1)<<32), 3},
		{"size below the header", set(good, 1, 16), 4},
		{"size too large", set(good, 1, 1<<40), 4},
		{"truncated", good[:len(good)-8], 1},
		{"longer than said", append(append([]byte(nil), good...), 0), 6},
		{"unterminated", append(set(good, 1, uint64(len(good)+1)), 'x'), 7},
		{"directory offset", set(good, 6, uint64(len(good))), 8},
		{"candidate array offset", set(good, 9, 1<<33), 8},
		{"candidate count", set(good, 8, 1<<61), 8},
		{"unaligned array", set(good, 11, ne.Uint64(good[8*11:])+4), 8},
		{"rlimit count", set(good, 14, 1<<40), 8},
		{"rule count", set(good, 21, uint64(len(good))), 8},
		{"no seccomp filter", set(good, 24, 0), 8},
		{"seccomp filter beyond", set(good, 24, 4000), 8},
		{"no argv", set(good, 10, 0), 8},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "rule count" && landlockABI() < 1 {
				t.Skip("needs Landlock; this kernel has none")
			}
			run := runCStage(t, blob, tt.block)
			if run.code != 255 {
				t.Errorf("exit %d, want 255", run.code)
			}
			if tt.why == 0 {
				if len(run.reports) != 0 {
					t.Errorf("reports %+v, want none", run.reports)
				}
				return
			}
			if len(run.reports) != 1 {
				t.Fatalf("reports %+v, want one", run.reports)
			}
			r := run.reports[0]
			if r.kind != kindSetup || r.op != opBlock || r.index != tt.why {
				t.Errorf("got report kind %d op %d reason %d, want setup, block, reason %d (%s)", r.kind, r.op, r.index, tt.why, blockRefusals[tt.why])
			}
		})
	}
}

// TestCStageSetupErrors checks the stage's setup failures, and the
// messages the helper makes of them.
func TestCStageSetupErrors(t *testing.T) {
	blob := cStageBlob(t)
	dir := t.TempDir()
	for _, tt := range []struct {
		name   string
		change func(*spec)
		want   string
	}{
		{"chdir", func(s *spec) { s.Dir = dir + "/gone" }, `sandbox setup failed: chdir "` + dir + `/gone": no such file or directory`},
		{"root", func(s *spec) { s.Root = &rootID{Mount: 1, Dev: 2, Ino: 3} },
			"sandbox setup failed: exec stage root: this process's root &{Mount:"},
		{"landlock rule", func(s *spec) { s.Landlock.Writable = append(s.Landlock.Writable, dir+"/gone") },
			`sandbox setup failed: landlock_add_rule "` + dir + `/gone": open: no such file or directory`},
		{"relative landlock rule", func(s *spec) { s.Landlock.Devices = []string{"dev/null"} },
			`sandbox setup failed: landlock_add_rule "dev/null": not an absolute path`},
		{"rlimit", func(s *spec) {
			// Above the hard limit: only root may raise it.
			var cur unix.Rlimit
			unix.Getrlimit(unix.RLIMIT_NPROC, &cur)
			s.Mech = Mechanisms{Processes: ByRlimit}
			s.Limits.MaxProcesses = int(cur.Max) + 1000
		}, "sandbox setup failed: setrlimit(RLIMIT_NPROC, "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := testSpec(t, dir, "true")
			if s.LandlockABI < 1 && strings.HasPrefix(tt.name, "landlock") {
				t.Skip("needs Landlock; this kernel has none")
			}
			if tt.name == "rlimit" {
				var cur unix.Rlimit
				unix.Getrlimit(unix.RLIMIT_NPROC, &cur)
				if os.Getuid() == 0 || cur.Max > 1<<30 {
					t.Skip("needs a finite hard RLIMIT_NPROC and a caller other than root, who may raise it")
				}
			}
			tt.change(s)
			block, call := encodeTestBlock(t, s)
			run := runCStage(t, blob, block)
			if run.code != 255 {
				t.Errorf("exit %d, want 255", run.code)
			}
			if len(run.reports) == 0 || run.reports[len(run.reports)-1].kind != kindSetup {
				t.Fatalf("reports %+v, want a setup failure last", run.reports)
			}
			var parts []error
			for _, r := range run.reports[:len(run.reports)-1] {
				parts = append(parts, call.rlimitError(r))
			}
			got := asSetupError(call.setupError(run.reports[len(run.reports)-1], parts)).Error()
			if !strings.HasPrefix(got, tt.want) {
				t.Errorf("got %q, want it to start %q", got, tt.want)
			}
		})
	}
}

// TestSealedMemfd checks that the stage's memfd cannot be changed.
func TestSealedMemfd(t *testing.T) {
	f, err := cstage.SealedMemfd("test", []byte("\x7fELF something"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write([]byte("x")); !errors.Is(err, unix.EPERM) {
		t.Errorf("write: %v, want EPERM", err)
	}
	if err := f.Truncate(1); !errors.Is(err, unix.EPERM) {
		t.Errorf("truncate: %v, want EPERM", err)
	}
	// Through another opening of the same file, read-write.
	rw, err := os.OpenFile(fmt.Sprintf("/proc/self/fd/%d", f.Fd()), os.O_RDWR, 0)
	if err == nil {
		_, err = rw.WriteAt([]byte("x"), 0)
		rw.Close()
	}
	if !errors.Is(err, unix.EPERM) {
		t.Errorf("write through /proc/self/fd: %v, want EPERM", err)
	}
	if _, err := unix.FcntlInt(f.Fd(), unix.F_ADD_SEALS, unix.F_SEAL_FUTURE_WRITE); !errors.Is(err, unix.EPERM) {
		t.Errorf("another seal: %v, want EPERM", err)
	}
	flags, err := unix.FcntlInt(f.Fd(), unix.F_GETFD, 0)
	if err != nil || flags&unix.FD_CLOEXEC == 0 {
		t.Errorf("descriptor flags %#x (%v), want close-on-exec", flags, err)
	}
}
