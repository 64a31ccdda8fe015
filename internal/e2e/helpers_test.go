package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// in returns a copy of e that reports to t, for use in a subtest.
func (e *env) in(t *testing.T) *env {
	c := *e
	c.t = t
	return &c
}

// attackPath copies the attack binary into the workspace and returns its
// path there. The binary may live under host /tmp, which the sandbox hides.
func (e *env) attackPath() string {
	e.t.Helper()
	dst := filepath.Join(e.ws, "attack")
	if _, err := os.Stat(dst); err == nil {
		return dst
	}
	b, err := os.ReadFile(attackBin)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		e.t.Fatal(err)
	}
	e.own(dst)
	return dst
}

// attack runs one attack subcommand in the one-shot form with flags and
// returns its output and exit status. It fails the test when the attempt
// could not be made (exit 4) or the sandbox did not start it.
func (e *env) attack(flags []string, args ...string) (out string, code int) {
	e.t.Helper()
	out, stderr, code := e.run(flags, append([]string{e.attackPath()}, args...)...)
	switch code {
	case 0, 3:
	case 4:
		e.t.Fatalf("attack %v could not be made: %s%s", args, out, stderr)
	default:
		e.t.Fatalf("attack %v: exit %d, stdout %q, stderr %q", args, code, out, stderr)
	}
	return strings.TrimSpace(out), code
}

// wantDenied checks that an attack subcommand was refused.
func (e *env) wantDenied(flags []string, args ...string) {
	e.t.Helper()
	out, code := e.attack(flags, args...)
	if code != 3 || !strings.HasPrefix(out, "denied:") {
		e.t.Errorf("attack %v: got exit %d %q, want denied (exit 3)", args, code, out)
		return
	}
	e.t.Logf("attack %v: %s", args, out)
}

// try runs script with sh in the one-shot form and reports whether it
// exited 0, with its combined output. It fails the test if the sandbox did
// not run the script at all (a setup failure must not pass for a denial).
func (e *env) try(flags []string, script string) (ok bool, output string) {
	e.t.Helper()
	stdout, stderr, code := e.run(flags, "sh", "-c", `sh -c "$1" 2>&1; echo "nsb-exit:$?"`, "sh", script)
	m := regexp.MustCompile(`nsb-exit:(\d+)\n$`).FindStringSubmatch(stdout)
	if m == nil || code != 0 {
		e.t.Fatalf("the sandbox did not run %q: exit %d\nstdout: %s\nstderr: %s", script, code, stdout, stderr)
	}
	n, _ := strconv.Atoi(m[1])
	return n == 0, strings.TrimSuffix(stdout, m[0])
}

// mustDeny runs script and fails the test if it succeeded.
func (e *env) mustDeny(flags []string, script string) string {
	e.t.Helper()
	ok, out := e.try(flags, script)
	if ok {
		e.t.Errorf("%q: succeeded, want denied\noutput: %s", script, out)
	}
	return out
}

// mustAllow runs script and fails the test unless it succeeded.
func (e *env) mustAllow(flags []string, script string) string {
	e.t.Helper()
	ok, out := e.try(flags, script)
	if !ok {
		e.t.Errorf("%q: failed, want allowed\noutput: %s", script, out)
	}
	return out
}

// git runs the host's git in the workspace with the server's environment,
// never looking above the workspace for a repository.
func (e *env) git(args ...string) string {
	e.t.Helper()
	out, err := e.gitTry(args...)
	if err != nil {
		e.t.Fatalf("host git %v: %v\n%s", args, err, out)
	}
	return out
}

func (e *env) gitTry(args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = e.ws
	cmd.Env = append(append([]string(nil), e.vars...), "GIT_CEILING_DIRECTORIES="+filepath.Dir(e.ws))
	if e.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: e.cred}
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// write creates a file below the workspace (or at an absolute path) with
// its parent directories.
func (e *env) write(path, body string, mode os.FileMode) string {
	e.t.Helper()
	if !filepath.IsAbs(path) {
		path = filepath.Join(e.ws, path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), mode); err != nil {
		e.t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		e.t.Fatal(err)
	}
	e.own(path)
	return path
}

// simulation names the restricted machine the servers of newEnv start on
// (restricted_linux_test.go), or is empty; simulate starts one there.
var (
	simulation string
	simulate   func(e *env, ctx context.Context, args []string) *exec.Cmd
)

// withoutNamespaces makes newEnv's servers run without namespaces, every
// protection it cannot keep given up (TestWithoutNamespaces).
var withoutNamespaces bool

// reducedFlags run a server without namespaces.
var reducedFlags = []string{"--without-namespaces", "--without-protection", "git-carve-outs,private-tmp,process-isolation,file-metadata"}

// reducedID runs the server when the test runs as root, which the sandbox
// without namespaces refuses.
const reducedID = 4242

// reduce makes e's servers run without namespaces, as the caller, or as
// reducedID, owning the test's home, for a root test.
func (e *env) reduce() {
	e.extra = reducedFlags
	if os.Getuid() != 0 {
		return
	}
	for _, p := range []string{e.home, filepath.Dir(e.home)} {
		os.Chmod(p, 0o755)
	}
	serverBin = reachable(e.t, serverBin)
	filepath.WalkDir(e.home, func(p string, _ fs.DirEntry, _ error) error { return os.Lchown(p, reducedID, reducedID) })
	e.cred = &syscall.Credential{Uid: reducedID, Gid: reducedID}
}

// reachableCopies are binaries copied where every user can run them.
var reachableCopies = map[string]string{}

// reachable returns path, or a copy every user can run when a directory
// above it is closed to others (a runner's home): reducedID runs it.
func reachable(t *testing.T, path string) string {
	if c, ok := reachableCopies[path]; ok {
		return c
	}
	open := true
	for p := path; p != "/"; p = filepath.Dir(p) {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm()&0o001 == 0 {
			open = false
		}
	}
	if open {
		return path
	}
	dir, err := os.MkdirTemp("", "nsb-e2e-bin-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c := filepath.Join(dir, filepath.Base(path))
	if err := os.WriteFile(c, b, 0o755); err != nil {
		t.Fatal(err)
	}
	reachableCopies[path] = c
	return c
}

// own gives path, and the directories above it up to the test's home, to
// e.cred, when the server runs as it.
func (e *env) own(path string) {
	if e.cred == nil {
		return
	}
	for p := path; p != e.home && p != "/" && strings.HasPrefix(p, e.home+"/"); p = filepath.Dir(p) {
		os.Lchown(p, int(e.cred.Uid), int(e.cred.Gid))
	}
}

// snapshot describes every file below root (or root itself, a file): type,
// mode and content, one line each, sorted. A missing root is "absent".
func snapshot(t *testing.T, root string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		line := fmt.Sprintf("%s %v", rel, fi.Mode())
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			line += " -> " + target
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			line += fmt.Sprintf(" %q", b)
		}
		lines = append(lines, line)
		return nil
	})
	if os.IsNotExist(err) {
		return "absent"
	}
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// daemonsWith lists host processes running the marker program itself (a
// copy in the sandbox's temporary directory named after the marker), not
// those that merely mention it.
func daemonsWith(marker string) []string {
	var out []string
	for _, p := range processesWith(marker) {
		_, cmdline, _ := strings.Cut(p, ": ")
		if prog, _, _ := strings.Cut(cmdline, " "); strings.HasPrefix(prog, "/") && strings.HasSuffix(prog, "/"+marker) {
			out = append(out, p)
		}
	}
	return out
}

// waitRunning waits up to d for the marker program to run on the host.
func waitRunning(t *testing.T, marker string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for len(daemonsWith(marker)) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("/tmp/%s never started", marker)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitRunningCall is waitRunning for a marker program a call starts: a
// call that ends before the program shows fails the test with its result.
func waitRunningCall(t *testing.T, marker string, d time.Duration, ch <-chan asyncResult) {
	t.Helper()
	deadline := time.Now().Add(d)
	for len(daemonsWith(marker)) == 0 {
		select {
		case r := <-ch:
			var out any
			if r.err == nil {
				out = r.res.StructuredContent
			}
			t.Fatalf("the call ended before the test saw %s run: %v %+v", marker, r.err, out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("/tmp/%s never started", marker)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// setsid is a shell prefix that runs the rest in a session of its own:
// util-linux's setsid, or on macOS, which has none, perl's.
var setsid = map[bool]string{false: "setsid", true: `perl -MPOSIX -e "POSIX::setsid() or die; exec @ARGV"`}[runtime.GOOS == "darwin"]

// daemonScript starts a setsid double-forked daemon that ignores SIGHUP,
// SIGINT and SIGTERM, running a copy of sleep named after the marker in the
// sandbox's temporary directory, then runs wait. The marker reaches the script in two pieces
// ($1 and $2), so only the daemon's own command line holds it whole.
func daemonScript(marker, wait string) []string {
	half := len(marker) / 2
	script := `M="$1$2"; T="${TMPDIR:-/tmp}"; cp /bin/sleep "$T/$M" || exit 9
(` + setsid + ` sh -c 'trap "" HUP INT TERM; exec "$0" 600' "$T/$M" </dev/null >/dev/null 2>&1 &)
echo started
` + wait
	return []string{"sh", "-c", script, "sh", marker[:half], marker[half:]}
}

// rawSession is a server driven over stdio without an SDK, so the test sees
// every byte it writes: each line must be one valid JSON-RPC message in
// valid UTF-8.
type rawSession struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	lines  chan []byte
	stderr *bytes.Buffer
	nextID int
	seen   [][]byte // every line the server wrote
}

// rawServe starts the server with flags and completes the MCP handshake.
func (e *env) rawServe(flags ...string) *rawSession {
	e.t.Helper()
	return e.rawStart(e.args(flags...), "2025-11-25")
}

// rawStart starts the server with exactly args and completes the MCP
// handshake, asking for protocol version protocol.
func (e *env) rawStart(args []string, protocol string) *rawSession {
	e.t.Helper()
	cmd := e.command(context.Background(), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	r := &rawSession{t: e.t, cmd: cmd, in: in, lines: make(chan []byte, 64), stderr: &stderr}
	go func() {
		defer close(r.lines)
		br := bufio.NewReader(out)
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 {
				r.lines <- line
			}
			if err != nil {
				return
			}
		}
	}()
	e.t.Cleanup(func() {
		in.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	r.request("initialize", map[string]any{
		"protocolVersion": protocol,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "nsb-e2e-raw", "version": "1"},
	})
	r.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	return r
}

func (r *rawSession) send(msg any) {
	r.t.Helper()
	b, err := json.Marshal(msg)
	if err != nil {
		r.t.Fatal(err)
	}
	if _, err := r.in.Write(append(b, '\n')); err != nil {
		r.t.Fatalf("write to server: %v\nstderr: %s", err, r.stderr)
	}
}

// request sends one request and returns the raw line of its response. Every
// line read on the way must be a valid JSON-RPC message in valid UTF-8.
func (r *rawSession) request(method string, params any) []byte {
	r.t.Helper()
	r.nextID++
	id := r.nextID
	r.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	timeout := time.After(90 * time.Second)
	for {
		select {
		case line, ok := <-r.lines:
			if !ok {
				r.t.Fatalf("server closed stdout waiting for %s\nstderr: %s", method, r.stderr)
			}
			r.seen = append(r.seen, line)
			if !utf8.Valid(line) {
				r.t.Fatalf("server wrote a line that is not UTF-8: %q", line)
			}
			if !json.Valid(line) {
				r.t.Fatalf("server wrote a line that is not JSON: %q", line)
			}
			var msg struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Method  string          `json:"method"`
				Result  json.RawMessage `json:"result"`
				Error   json.RawMessage `json:"error"`
			}
			if err := json.Unmarshal(line, &msg); err != nil || msg.JSONRPC != "2.0" {
				r.t.Fatalf("server wrote a line that is not JSON-RPC 2.0: %q", line)
			}
			if msg.Method != "" {
				continue // a notification or request from the server
			}
			if string(msg.ID) != strconv.Itoa(id) {
				r.t.Fatalf("response to id %s, want %d: %q", msg.ID, id, line)
			}
			if msg.Error != nil {
				r.t.Fatalf("%s: error %s", method, msg.Error)
			}
			return line
		case <-timeout:
			r.t.Fatalf("no response to %s\nstderr: %s", method, r.stderr)
		}
	}
}

// call calls run_command and decodes the result from its raw line.
func (r *rawSession) call(arguments map[string]any) (line []byte, isError bool, out output) {
	r.t.Helper()
	line = r.request("tools/call", map[string]any{"name": "run_command", "arguments": arguments})
	var resp struct {
		Result struct {
			IsError           bool            `json:"isError"`
			StructuredContent json.RawMessage `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal(line, &resp); err != nil {
		r.t.Fatal(err)
	}
	if err := json.Unmarshal(resp.Result.StructuredContent, &out); err != nil {
		r.t.Fatalf("structured content %s: %v", resp.Result.StructuredContent, err)
	}
	return line, resp.Result.IsError, out
}

// startOneShot starts the one-shot form without waiting for it.
func (e *env) startOneShot(flags []string, cmd ...string) (*exec.Cmd, *bytes.Buffer) {
	e.t.Helper()
	args := append(e.args(flags...), "--")
	c := e.command(context.Background(), append(args, cmd...)...)
	c.Dir = e.ws
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	if err := c.Start(); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		c.Process.Kill()
		c.Wait()
	})
	return c, &out
}

// asyncResult is the outcome of a call made with callAsync.
type asyncResult struct {
	res *mcp.CallToolResult
	err error
}

// decode returns a result's structured content.
func decode(t *testing.T, res *mcp.CallToolResult) output {
	t.Helper()
	var out output
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
	return out
}

// callAsync runs s.CallTool on its own goroutine; the result arrives on the
// channel (a goroutine must not call t.Fatal).
func (s *session) callAsync(ctx context.Context, arguments map[string]any) <-chan asyncResult {
	ch := make(chan asyncResult, 1)
	go func() {
		res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "run_command", Arguments: arguments})
		ch <- asyncResult{res, err}
	}()
	return ch
}
