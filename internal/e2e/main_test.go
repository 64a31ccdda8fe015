package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var (
	serverBin string // the nanosandbox-mcp binary under test
	attackBin string // internal/e2e/attack, run inside the sandbox
	builtHere bool   // built by TestMain from this module's sources
	// dynamicBin is a build with an ELF interpreter (cgo), or "" with
	// dynamicWhy saying why there is none.
	dynamicBin, dynamicWhy string
	// noLandlockBin is a test build with Landlock switched off (-tags
	// nanosandbox_nolandlock); "" when binaries were given without one.
	noLandlockBin string

	sourcesOnce sync.Once
)

// secretValue is in the server's environment in every test; no command may
// ever see it.
const secretValue = "nsb-secret-6f1e2d"

func TestMain(m *testing.M) {
	serverBin, attackBin = os.Getenv("NANOSANDBOX_BIN"), os.Getenv("NANOSANDBOX_ATTACK_BIN")
	dynamicBin = os.Getenv("NANOSANDBOX_DYNAMIC_BIN")
	noLandlockBin = os.Getenv("NANOSANDBOX_NOLANDLOCK_BIN")
	var tmp string
	if serverBin == "" || attackBin == "" {
		builtHere = true
		var err error
		tmp, err = os.MkdirTemp("", "nsb-e2e-bin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Chmod(tmp, 0o755)
		for _, b := range []struct {
			dst *string
			pkg string
		}{{&serverBin, "../.."}, {&attackBin, "./attack"}} {
			if *b.dst != "" {
				continue
			}
			*b.dst = filepath.Join(tmp, filepath.Base(b.pkg))
			if b.pkg == "../.." {
				*b.dst = filepath.Join(tmp, "nanosandbox-mcp")
			}
			cmd := exec.Command("go", "build", "-trimpath", "-o", *b.dst, b.pkg)
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				fmt.Fprintf(os.Stderr, "go build %s: %v\n%s", b.pkg, err, out)
				os.Exit(1)
			}
		}
		if noLandlockBin == "" {
			noLandlockBin = filepath.Join(tmp, "nanosandbox-mcp-nolandlock")
			cmd := exec.Command("go", "build", "-trimpath", "-tags", "nanosandbox_nolandlock", "-o", noLandlockBin, "../..")
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				fmt.Fprintf(os.Stderr, "go build -tags nanosandbox_nolandlock: %v\n%s", err, out)
				os.Exit(1)
			}
		}
		if dynamicBin == "" {
			// What go run gives on a machine with a C compiler.
			dynamicBin = filepath.Join(tmp, "nanosandbox-mcp-dynamic")
			cmd := exec.Command("go", "build", "-o", dynamicBin, "../..")
			cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
			if out, err := cmd.CombinedOutput(); err != nil {
				dynamicBin, dynamicWhy = "", fmt.Sprintf("a cgo build failed here (no C compiler?): %v: %s", err, bytes.TrimSpace(out))
			}
		}
	}
	code := m.Run()
	if tmp != "" {
		os.RemoveAll(tmp)
	}
	for _, c := range reachableCopies {
		os.RemoveAll(filepath.Dir(c))
	}
	os.Exit(code)
}

// readSources reads every source file of the module. The binaries are
// built in a subprocess, which go test's result cache cannot see; files the
// test process itself reads while tests run, it can: so a change anywhere
// reruns these tests instead of replaying a cached pass. newEnv calls it.
func readSources() {
	filepath.WalkDir("../..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "dist" || strings.HasPrefix(d.Name(), ".") && path != "../..") {
			return filepath.SkipDir
		}
		if n := d.Name(); strings.HasSuffix(n, ".go") || n == "go.mod" || n == "go.sum" || strings.HasSuffix(n, ".s") {
			os.ReadFile(path)
		}
		return nil
	})
}

// env is one test's world: a fake home holding credentials, a workspace
// inside it, and the environment the server is started with.
type env struct {
	t      *testing.T
	home   string // HOME of the server
	ws     string // the workspace, $HOME/proj
	vars   []string
	stderr *syncBuffer // the server's stderr, for tests that start it raw
	// extra are flags every server of this test gets after its own (the
	// sandbox without namespaces: withoutNamespaces).
	extra []string
	// cred, if set, is whom the server, the host's git and the test's
	// files run and belong to: an unprivileged uid when the test runs as
	// root and the sandbox without namespaces refuses root.
	cred *syscall.Credential
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newEnv(t *testing.T) *env {
	t.Helper()
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("the sandbox runs on Linux and macOS only")
	}
	if builtHere {
		sourcesOnce.Do(readSources)
	}
	// As the server names it: on macOS the temporary directories are
	// under /var, which is /private/var.
	home, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(home, "proj")
	for _, f := range []struct{ path, body string }{
		{"proj/README", "the workspace\n"},
		{".ssh/id_ed25519", "PRIVATE KEY " + secretValue + "\n"},
		{".aws/credentials", "[default]\naws_secret_access_key = " + secretValue + "\n"},
		{".netrc", "machine example.com password " + secretValue + "\n"},
		{"notes.txt", "home notes " + secretValue + "\n"},
	} {
		p := filepath.Join(home, f.path)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f.body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	path := "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
	if runtime.GOOS == "darwin" {
		// Homebrew's, where its git is (on Intel in /usr/local/bin): as
		// on most Macs, and not /usr/bin/git, Xcode's shim, which
		// complains that it cannot write its cache in the shared
		// temporary directory.
		path = "/opt/homebrew/bin:" + path
	}
	e := &env{t: t, home: home, ws: ws, stderr: &syncBuffer{}, vars: []string{
		"HOME=" + home,
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"PATH=" + path,
		"LANG=C.UTF-8",
		"NSB_TEST_SECRET=" + secretValue,
		"GIT_CONFIG_GLOBAL=" + filepath.Join(home, ".gitconfig"),
	}}
	if withoutNamespaces {
		e.reduce()
	}
	return e
}

// args are the server's arguments: the workspace, flags, then e.extra.
func (e *env) args(flags ...string) []string {
	return append(append([]string{"--workspace", e.ws}, flags...), e.extra...)
}

// command is the server with args, as e.cred if set, in e's environment.
func (e *env) command(ctx context.Context, args ...string) *exec.Cmd {
	if simulation != "" {
		return simulate(e, ctx, args)
	}
	cmd := exec.CommandContext(ctx, serverBin, args...)
	cmd.Env = e.vars
	if e.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: e.cred}
	}
	return cmd
}

// run runs the one-shot form: nanosandbox-mcp --workspace WS FLAGS -- CMD...
func (e *env) run(flags []string, cmd ...string) (stdout, stderr string, code int) {
	e.t.Helper()
	args := append(e.args(flags...), "--")
	return e.runRaw(append(args, cmd...)...)
}

// sh runs a shell script in the one-shot form with no extra flags.
func (e *env) sh(script string) (stdout, stderr string, code int) {
	e.t.Helper()
	return e.run(nil, "sh", "-c", script)
}

// runRaw runs the binary with exactly args.
func (e *env) runRaw(args ...string) (stdout, stderr string, code int) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := e.command(ctx, args...)
	cmd.Dir = e.ws
	var o, s bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &s
	if err := cmd.Run(); err != nil && cmd.ProcessState == nil {
		e.t.Fatalf("run %v: %v", args, err)
	}
	return o.String(), s.String(), exitCode(cmd.ProcessState)
}

// exitCode is a process's status as a shell reports it: 128+N for signal N.
func exitCode(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// session is a running server and a client connected to it.
type session struct {
	*mcp.ClientSession
	cmd    *exec.Cmd
	stderr *stderrPipe
}

// stderrPipe is a server's stderr: a pipe of the test's own, read to its
// end. Its end (done) says that no process holds it any more, the server
// nor anything it started, which a test can wait for without cmd.Wait:
// CommandTransport calls that itself when the session closes, and of two
// Waits at once one never returns.
type stderrPipe struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	done chan struct{}
}

func (p *stderrPipe) read(r *os.File) {
	defer close(p.done)
	defer r.Close()
	b := make([]byte, 4096)
	for {
		n, err := r.Read(b)
		p.mu.Lock()
		p.buf.Write(b[:n])
		p.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// String is what the server wrote to stderr so far.
func (p *stderrPipe) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.buf.String()
}

// serve starts the server with flags and connects a go-sdk client over
// stdio through CommandTransport.
func (e *env) serve(flags ...string) *session {
	e.t.Helper()
	cmd := e.command(context.Background(), e.args(flags...)...)
	r, w, err := os.Pipe()
	if err != nil {
		e.t.Fatal(err)
	}
	stderr := &stderrPipe{done: make(chan struct{})}
	go stderr.read(r)
	cmd.Stderr = w
	client := mcp.NewClient(&mcp.Implementation{Name: "nsb-e2e", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, nil)
	w.Close() // the server has its own copy, if it started
	if err != nil {
		select {
		case <-stderr.done:
		case <-time.After(2 * time.Second):
		}
		e.t.Fatalf("connect: %v\nstderr: %s", err, stderr.String())
	}
	s := &session{ClientSession: cs, cmd: cmd, stderr: stderr}
	e.t.Cleanup(func() { cs.Close() })
	return s
}

// output is run_command's structured result.
type output struct {
	ExitCode           int      `json:"exit_code"`
	Signal             string   `json:"signal"`
	TimedOut           bool     `json:"timed_out"`
	DurationMS         int64    `json:"duration_ms"`
	Stdout             string   `json:"stdout"`
	Stderr             string   `json:"stderr"`
	StdoutOmittedBytes int64    `json:"stdout_omitted_bytes"`
	StderrOmittedBytes int64    `json:"stderr_omitted_bytes"`
	MemoryPeakBytes    int64    `json:"memory_peak_bytes"`
	Error              string   `json:"error"`
	Notes              []string `json:"notes"`
}

// call calls run_command with arguments and decodes the result.
func (s *session) call(t *testing.T, arguments map[string]any) (*mcp.CallToolResult, output) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	return s.callCtx(ctx, t, arguments)
}

func (s *session) callCtx(ctx context.Context, t *testing.T, arguments map[string]any) (*mcp.CallToolResult, output) {
	t.Helper()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "run_command", Arguments: arguments})
	if err != nil {
		t.Fatalf("call %v: %v", arguments, err)
	}
	var out output
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("structured content %s: %v", b, err)
		}
	}
	return res, out
}

// text is a result's text content.
func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// shCall runs a shell script through run_command.
func (s *session) sh(t *testing.T, script string) (*mcp.CallToolResult, output) {
	t.Helper()
	return s.call(t, map[string]any{"command": "sh", "args": []string{"-c", script}})
}

// linuxOnly skips t on macOS, saying why the row is Linux's alone.
func linuxOnly(t *testing.T, why string) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("Linux only: " + why)
	}
}

// sandboxTmp is where a command writes temporary files, as a shell
// expression: /tmp is private on Linux; on macOS /tmp is the host's, and
// read-only, and $TMPDIR a directory of the call's own.
func sandboxTmp() string {
	if runtime.GOOS == "darwin" {
		return `"$TMPDIR"`
	}
	return "/tmp"
}

// cacheDir is where the server under test keeps its state (the private
// homes) for the home it runs with: os.UserCacheDir's answer.
func cacheDir(home string) string {
	if runtime.GOOS == "darwin" {
		return filepath.Join(home, "Library", "Caches", "nanosandbox-mcp")
	}
	return filepath.Join(home, ".cache", "nanosandbox-mcp")
}

// processesWith lists host processes whose command line contains marker.
func processesWith(marker string) []string {
	if runtime.GOOS == "darwin" {
		return psWith(marker)
	}
	var found []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(marker)) {
			found = append(found, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return found
}

// psWith is processesWith where there is no /proc: ps lists every
// process with its whole command line.
func psWith(marker string) []string {
	out, err := exec.Command("ps", "-axww", "-o", "pid=,command=").Output()
	if err != nil {
		return []string{"ps: " + err.Error()} // never "none left"
	}
	var found []string
	for _, line := range strings.Split(string(out), "\n") {
		pid, cmdline, ok := strings.Cut(strings.TrimSpace(line), " ")
		if ok && strings.Contains(cmdline, marker) && !strings.Contains(cmdline, "ps -axww") {
			found = append(found, pid+": "+strings.TrimSpace(cmdline))
		}
	}
	return found
}

// waitGone waits up to d for no host process to carry marker.
func waitGone(t *testing.T, marker string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		left := processesWith(marker)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes left running: %v", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// uniqueMarker returns a string to put in a command line and look for.
func uniqueMarker(t *testing.T) string {
	return fmt.Sprintf("nsbmark%d%d", os.Getpid(), time.Now().UnixNano()%1e9)
}

// sleepMarker returns a duration for sleep(1) that no other process has in
// its command line: "sleep MARKER" sleeps over an hour and can be found.
func sleepMarker() string {
	return fmt.Sprintf("5%03d.%09d", os.Getpid()%1000, time.Now().UnixNano()%1e9)
}

func strconvItoa(i int) string { return fmt.Sprint(i) }
