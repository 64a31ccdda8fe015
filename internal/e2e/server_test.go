package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestServerListsOneTool(t *testing.T) {
	e := newEnv(t)
	s := e.serve()
	res, err := s.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 1 || res.Tools[0].Name != "run_command" {
		t.Fatalf("got tools %+v, want only run_command", res.Tools)
	}
	tool := res.Tools[0]
	if !strings.Contains(tool.Description, e.ws) {
		t.Errorf("description does not state the workspace %s:\n%s", e.ws, tool.Description)
	}
	raw, _ := json.Marshal(tool.InputSchema)
	var schema struct {
		AdditionalProperties *bool                     `json:"additionalProperties"`
		Required             []string                  `json:"required"`
		Properties           map[string]map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	if schema.AdditionalProperties == nil || *schema.AdditionalProperties ||
		len(schema.Required) != 1 || schema.Required[0] != "command" ||
		schema.Properties["args"]["type"] != "array" || len(schema.Properties) != 3 {
		t.Errorf("input schema: %s", raw)
	}
}

func TestServerEcho(t *testing.T) {
	s := newEnv(t).serve()
	res, out := s.call(t, map[string]any{"command": "echo", "args": []string{"hello", "world"}})
	if res.IsError || out.ExitCode != 0 || out.Stdout != "hello world\n" {
		t.Fatalf("got isError=%v %+v, want exit 0 and \"hello world\\n\"", res.IsError, out)
	}
	if !strings.HasPrefix(text(res), "exit status 0") {
		t.Errorf("text does not open with the status: %q", text(res))
	}
}

func TestServerStdin(t *testing.T) {
	s := newEnv(t).serve()
	_, out := s.call(t, map[string]any{"command": "tr", "args": []string{"a-z", "A-Z"}, "stdin": "shout\n"})
	if out.Stdout != "SHOUT\n" {
		t.Fatalf("got stdout %q, want %q", out.Stdout, "SHOUT\n")
	}
	// Without stdin the program reads EOF at once, never the server's stdin.
	_, out = s.call(t, map[string]any{"command": "cat"})
	if out.ExitCode != 0 || out.Stdout != "" {
		t.Fatalf("cat without stdin: got %+v, want exit 0 and no output", out)
	}
}

func TestServerExitCodes(t *testing.T) {
	s := newEnv(t).serve()
	for _, code := range []int{0, 1, 2, 42, 255} {
		res, out := s.sh(t, "echo out; echo err >&2; exit "+itoa(code))
		if res.IsError || out.ExitCode != code || out.Stdout != "out\n" || out.Stderr != "err\n" {
			t.Errorf("exit %d: got isError=%v %+v", code, res.IsError, out)
		}
	}
	res, out := s.sh(t, "kill -TERM $$")
	if res.IsError || out.Signal != "SIGTERM" || out.ExitCode != -1 {
		t.Errorf("killed by SIGTERM: got isError=%v %+v", res.IsError, out)
	}
}

func TestServerRefusesBadArguments(t *testing.T) {
	s := newEnv(t).serve()
	for _, tt := range []struct {
		name string
		args map[string]any
	}{
		{"extra argument", map[string]any{"command": "echo", "cwd": "/"}},
		{"empty command", map[string]any{"command": ""}},
		{"missing command", map[string]any{"args": []string{"x"}}},
		{"args not strings", map[string]any{"command": "echo", "args": []any{1, 2}}},
		{"NUL in argument", map[string]any{"command": "echo", "args": []string{"a\x00b"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, _ := s.call(t, tt.args)
			if !res.IsError {
				t.Fatalf("got a result %q, want isError", text(res))
			}
		})
	}
	// The session is still fine afterwards.
	if _, out := s.call(t, map[string]any{"command": "true"}); out.ExitCode != 0 {
		t.Fatalf("after refusals: got %+v", out)
	}
}

func TestServerCommandNotFound(t *testing.T) {
	s := newEnv(t).serve()
	res, out := s.call(t, map[string]any{"command": "no-such-program-xyz"})
	if !res.IsError || !strings.HasPrefix(text(res), "failed to start") || out.ExitCode != -1 {
		t.Fatalf("got isError=%v %q %+v, want a failed-to-start error", res.IsError, text(res), out)
	}
}

func TestServerTimeoutKeepsPartialOutput(t *testing.T) {
	e := newEnv(t)
	s := e.serve("--timeout", "1s")
	m := sleepMarker()
	res, out := s.sh(t, "echo started; ("+setsid+" sleep "+m+" &) ; sleep "+m)
	if !res.IsError || !out.TimedOut || out.Stdout != "started\n" {
		t.Fatalf("got isError=%v %+v, want a timeout with the partial output", res.IsError, out)
	}
	if !strings.HasPrefix(text(res), "timed out after 1s") {
		t.Errorf("text: %q", text(res))
	}
	waitGone(t, m, 5*time.Second)
}

func TestServerCancelKillsTheCommand(t *testing.T) {
	e := newEnv(t)
	s := e.serve()
	m := sleepMarker()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		deadline := time.Now().Add(20 * time.Second)
		for len(processesWith(m)) == 0 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		cancel()
	}()
	_, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "run_command", Arguments: map[string]any{
		"command": "sleep", "args": []string{m},
	}})
	if err == nil {
		t.Fatal("the cancelled call returned a result")
	}
	waitGone(t, m, 5*time.Second)
	if _, out := s.call(t, map[string]any{"command": "true"}); out.ExitCode != 0 {
		t.Fatalf("after cancel: got %+v", out)
	}
}

func TestServerConcurrentCalls(t *testing.T) {
	s := newEnv(t).serve("--max-concurrent", "8")
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	began := time.Now()
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, out := s.sh(t, "sleep 1; echo "+itoa(i))
			if out.ExitCode != 0 || out.Stdout != itoa(i)+"\n" {
				errs <- "call " + itoa(i) + ": " + out.Stdout + out.Stderr
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	// Not a timing assertion (the machine is shared): only that they did
	// not run one after another.
	if d := time.Since(began); d > 7*time.Second {
		t.Errorf("8 concurrent calls of sleep 1 took %s: they ran one after another", d)
	}
}

// startRaw starts the server with raw pipes and performs the handshake, for
// tests that need to control stdin or read stdout line by line.
func (e *env) startRaw(t *testing.T, flags ...string) (cmd *exec.Cmd, stdin io.WriteCloser, lines <-chan string) {
	t.Helper()
	cmd = exec.Command(serverBin, append([]string{"--workspace", e.ws}, flags...)...)
	cmd.Env = e.vars
	cmd.Stderr = e.stderr
	stdin, _ = cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	ch := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			ch <- sc.Text()
		}
		close(ch)
	}()
	send(t, stdin, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	expectID(t, ch, 0)
	send(t, stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return cmd, stdin, ch
}

func send(t *testing.T, w io.Writer, line string) {
	t.Helper()
	if _, err := io.WriteString(w, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

// expectID reads lines until the reply with id arrives; every line must be
// a JSON-RPC message.
func expectID(t *testing.T, lines <-chan string, id int) map[string]any {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("stdout ended before the reply to %d", id)
			}
			msg := mustJSONRPC(t, line)
			if got, ok := msg["id"].(float64); ok && int(got) == id {
				return msg
			}
		case <-timeout:
			t.Fatalf("no reply to %d", id)
		}
	}
}

func mustJSONRPC(t *testing.T, line string) map[string]any {
	t.Helper()
	var msg map[string]any
	if err := json.Unmarshal([]byte(line), &msg); err != nil || msg["jsonrpc"] != "2.0" {
		t.Fatalf("stdout line is not JSON-RPC: %q", line)
	}
	return msg
}

func TestServerStdoutIsOnlyJSONRPC(t *testing.T) {
	e := newEnv(t)
	_, stdin, lines := e.startRaw(t)
	calls := []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run_command","arguments":{"command":"sh","args":["-c","printf '{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\\n'; echo to-stderr >&2"]}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"run_command","arguments":{"command":"no-such-program"}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"run_command","arguments":{"command":"sh","args":["-c","printf '\\377\\376\\000abc'"]}}}`,
	}
	for i, c := range calls {
		send(t, stdin, c)
		msg := expectID(t, lines, i+1)
		if i == 1 {
			res := msg["result"].(map[string]any)["structuredContent"].(map[string]any)
			if !strings.Contains(res["stdout"].(string), `"jsonrpc":"2.0","id":2`) {
				t.Errorf("the command's JSON-RPC-looking output did not arrive as output: %v", res)
			}
		}
	}
	stdin.Close()
	for line := range lines {
		mustJSONRPC(t, line)
	}
}

func TestServerSignalDuringCall(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			e := newEnv(t)
			cmd, stdin, lines := e.startRaw(t)
			stderr := e.stderr
			m := sleepMarker()
			send(t, stdin, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_command","arguments":{"command":"sleep","args":["`+m+`"]}}}`)
			waitFor(t, func() bool { return len(processesWith(m)) > 0 })
			cmd.Process.Signal(sig)
			waitExit(t, cmd, 10*time.Second)
			waitGone(t, m, 5*time.Second)
			for line := range lines {
				mustJSONRPC(t, line)
			}
			if strings.Contains(stderr.String(), "ERROR") {
				t.Errorf("a normal shutdown logged an error: %s", stderr.String())
			}
		})
	}
}

func TestServerSendsProgress(t *testing.T) {
	e := newEnv(t)
	args := append([]string{"--workspace", e.ws}, "--timeout", "20s")
	cmd := exec.Command(serverBin, args...)
	cmd.Env = e.vars
	var mu sync.Mutex
	var got []*mcp.ProgressNotificationParams
	client := mcp.NewClient(&mcp.Implementation{Name: "progress", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			got = append(got, req.Params)
			mu.Unlock()
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	params := &mcp.CallToolParams{Name: "run_command", Arguments: map[string]any{"command": "sh", "args": []string{"-c", "echo tick; sleep 3.5; echo tock"}}}
	params.SetProgressToken("tok-1")
	res, err := cs.CallTool(ctx, params)
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) < 2 || len(got) > 5 {
		t.Fatalf("got %d progress notifications over 3.5 s, want about one a second", len(got))
	}
	for i, p := range got {
		if p.ProgressToken != "tok-1" || p.Total != 20 || p.Progress <= 0 || i > 0 && p.Progress <= got[i-1].Progress {
			t.Errorf("notification %d: %+v", i, p)
		}
	}
	// Without a token, none.
	before := len(got)
	mu.Unlock()
	cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_command", Arguments: map[string]any{"command": "sleep", "args": []string{"1.5"}}})
	mu.Lock()
	if len(got) != before {
		t.Errorf("progress sent without a progress token: %+v", got[before:])
	}
}

func TestServerStdinEOFDuringCall(t *testing.T) {
	e := newEnv(t)
	cmd, stdin, lines := e.startRaw(t)
	m := sleepMarker()
	send(t, stdin, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_command","arguments":{"command":"sleep","args":["`+m+`"]}}}`)
	waitFor(t, func() bool { return len(processesWith(m)) > 0 })
	stdin.Close()
	waitExit(t, cmd, 10*time.Second)
	waitGone(t, m, 5*time.Second)
	for line := range lines {
		mustJSONRPC(t, line)
	}
}

func TestBadFlagExits2(t *testing.T) {
	e := newEnv(t)
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", []string{"--workspace", e.ws, "--no-such-flag"}, "unknown flag"},
		{"no workspace", nil, "--workspace: is required"},
		{"missing workspace", []string{"--workspace", e.ws + "/missing"}, "no such file or directory"},
		{"workspace is a file", []string{"--workspace", e.ws + "/README"}, "not a directory"},
		{"bad timeout", []string{"--workspace", e.ws, "--timeout", "soon"}, "invalid argument"},
		{"bad size", []string{"--workspace", e.ws, "--max-output", "12 parsecs"}, "unknown unit"},
		{"bad env", []string{"--workspace", e.ws, "--env", "1BAD"}, "not a variable name"},
		{"unset env", []string{"--workspace", e.ws, "--env", "NSB_NOT_SET_ANYWHERE"}, "not set"},
		{"read-only and writable", []string{"--workspace", e.ws, "--read-only", e.home, "--writable", e.home}, "also given as"},
		{"stray argument", []string{"--workspace", e.ws, "ls"}, "unexpected argument"},
		{"bad network", []string{"--workspace", e.ws, "--allow-net", "example.com:http", "--", "true"}, "not a port"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := e.runRaw(tt.args...)
			if code != 2 {
				t.Errorf("got exit %d, want 2", code)
			}
			if stdout != "" {
				t.Errorf("stdout: %q, want nothing", stdout)
			}
			if !strings.Contains(stderr, "nanosandbox-mcp: error: ") || !strings.Contains(stderr, "nanosandbox-mcp: hint: ") || !strings.Contains(stderr, tt.want) {
				t.Errorf("stderr %q lacks error:, hint: or %q", stderr, tt.want)
			}
		})
	}
}

func TestOneShot(t *testing.T) {
	e := newEnv(t)
	stdout, _, code := e.sh("echo hello > note.txt; cat note.txt")
	if code != 0 || stdout != "hello\n" {
		t.Fatalf("got %d %q", code, stdout)
	}
	_, stderr, code := e.sh("echo x > /etc/nsb-x")
	denied := map[string]string{"darwin": "Operation not permitted"}[runtime.GOOS]
	if denied == "" {
		denied = "Read-only file system"
	}
	if code == 0 || !strings.Contains(stderr, denied) {
		t.Fatalf("writing /etc: got exit %d, stderr %q", code, stderr)
	}
	for _, tt := range []struct {
		cmd  []string
		want int
	}{
		{[]string{"sh", "-c", "exit 7"}, 7},
		{[]string{"sh", "-c", "kill -TERM $$"}, 128 + 15},
		{[]string{"no-such-program-xyz"}, 127},
		{[]string{"/etc/passwd"}, 126},
	} {
		if _, _, code := e.run(nil, tt.cmd...); code != tt.want {
			t.Errorf("%v: got exit %d, want %d", tt.cmd, code, tt.want)
		}
	}
	if _, stderr, code := e.run([]string{"--timeout", "1s"}, "sleep", "30"); code != 124 || !strings.Contains(stderr, "timed out") {
		t.Errorf("timeout: got %d %q, want 124", code, stderr)
	}
}

func TestVersionAndHelp(t *testing.T) {
	e := newEnv(t)
	stdout, _, code := e.runRaw("--version")
	if code != 0 || !strings.HasPrefix(stdout, "nanosandbox-mcp ") {
		t.Errorf("--version: got %d %q", code, stdout)
	}
	stdout, _, code = e.runRaw("--help")
	if code != 0 || !strings.Contains(stdout, "--workspace") || !strings.Contains(stdout, "--max-concurrent") {
		t.Errorf("--help: got %d %q", code, stdout)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 20s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func waitExit(t *testing.T, cmd *exec.Cmd, d time.Duration) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		cmd.Process.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("the server did not exit within %s", d)
	}
}

func itoa(i int) string { return strconvItoa(i) }
