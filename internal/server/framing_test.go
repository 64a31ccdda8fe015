package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
)

// filter runs input through a framing with the given line limit and
// returns what the SDK would read, the replies written, and the log.
func filter(t testing.TB, input string, limit int) (passed string, replies []string, logged string) {
	t.Helper()
	var out, log bytes.Buffer
	f, _ := newFraming(strings.NewReader(input), &out, slog.New(slog.NewTextHandler(&log, nil)))
	if limit > 0 {
		f.max = limit
	}
	got, err := io.ReadAll(f)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	for _, line := range strings.SplitAfter(out.String(), "\n") {
		if line == "" {
			continue
		}
		if !strings.HasSuffix(line, "\n") {
			t.Fatalf("reply without a newline: %q", line)
		}
		replies = append(replies, summarize(t, strings.TrimSuffix(line, "\n")))
	}
	return string(got), replies, log.String()
}

// summarize reduces a JSON-RPC error reply (or a batch of them) to "code id".
func summarize(t testing.TB, line string) string {
	t.Helper()
	if strings.HasPrefix(line, "[") {
		var batch []json.RawMessage
		if err := json.Unmarshal([]byte(line), &batch); err != nil {
			t.Fatalf("reply %q: %v", line, err)
		}
		var parts []string
		for _, m := range batch {
			parts = append(parts, summarize(t, string(m)))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	var r struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *jsonrpc.Error  `json:"error"`
	}
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		t.Fatalf("reply %q: %v", line, err)
	}
	if r.JSONRPC != "2.0" || r.Error == nil || r.Error.Message == "" {
		t.Fatalf("reply %q is not a JSON-RPC 2.0 error", line)
	}
	return fmt.Sprintf("%d %s", r.Error.Code, r.ID)
}

func TestFraming(t *testing.T) {
	const ping = `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	for _, tt := range []struct {
		name    string
		input   string
		passed  string
		replies []string
		logs    bool // a log line is written
	}{
		{name: "request", input: ping + "\n", passed: ping + "\n"},
		{name: "notification", input: `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n", passed: `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"},
		{name: "response", input: `{"jsonrpc":"2.0","id":"s1","result":{}}` + "\n", passed: `{"jsonrpc":"2.0","id":"s1","result":{}}` + "\n"},
		{name: "unknown method passes through", input: `{"jsonrpc":"2.0","id":2,"method":"no/such"}` + "\n", passed: `{"jsonrpc":"2.0","id":2,"method":"no/such"}` + "\n"},
		{name: "bytes kept as sent", input: `{ "id" : 1e0, "method":"ping" ,"jsonrpc":"2.0","params":{"x":"\u00e9é"} }` + "\n", passed: `{ "id" : 1e0, "method":"ping" ,"jsonrpc":"2.0","params":{"x":"\u00e9é"} }` + "\n"},
		{name: "crlf and spaces around", input: " \t" + ping + " \r\n", passed: ping + "\n"},
		{name: "no final newline", input: ping, passed: ping + "\n"},
		{name: "blank lines skipped", input: "\n\r\n   \n" + ping + "\n\n", passed: ping + "\n"},
		{name: "two in a row", input: ping + "\n" + ping + "\n", passed: ping + "\n" + ping + "\n"},
		{name: "not JSON", input: "hello\n" + ping + "\n", passed: ping + "\n", replies: []string{"-32700 null"}, logs: true},
		{name: "truncated JSON", input: `{"jsonrpc":"2.0","id":3,"method":"pi` + "\n", replies: []string{"-32700 null"}, logs: true},
		{name: "two values on a line", input: ping + " " + ping + "\n", replies: []string{"-32700 null"}, logs: true},
		{name: "byte order mark", input: "\xef\xbb\xbf" + ping + "\n", replies: []string{"-32700 null"}, logs: true},
		{name: "NUL bytes", input: "\x00\x00\n", replies: []string{"-32700 null"}, logs: true},
		{name: "number", input: "42\n", replies: []string{"-32600 null"}, logs: true},
		{name: "string", input: `"ping"` + "\n", replies: []string{"-32600 null"}, logs: true},
		{name: "null", input: "null\n", replies: []string{"-32600 null"}, logs: true},
		{name: "empty object", input: "{}\n", replies: []string{"-32600 null"}, logs: true},
		{name: "no jsonrpc member", input: `{"id":4,"method":"ping"}` + "\n", replies: []string{"-32600 4"}, logs: true},
		{name: "wrong version", input: `{"jsonrpc":"1.0","id":"a","method":"ping"}` + "\n", replies: []string{`-32600 "a"`}, logs: true},
		{name: "version not a string", input: `{"jsonrpc":2.0,"id":5,"method":"ping"}` + "\n", replies: []string{"-32600 5"}, logs: true},
		{name: "method not a string", input: `{"jsonrpc":"2.0","id":6,"method":7}` + "\n", replies: []string{"-32600 6"}, logs: true},
		{name: "id an object", input: `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}` + "\n", replies: []string{"-32600 null"}, logs: true},
		{name: "id too big for a float64", input: `{"jsonrpc":"2.0","id":1e400,"method":"ping"}` + "\n", replies: []string{"-32600 null"}, logs: true},
		{name: "id a bool", input: `{"jsonrpc":"2.0","id":true,"method":"ping"}` + "\n", replies: []string{"-32600 null"}, logs: true},
		{name: "params not structured", input: `{"jsonrpc":"2.0","id":8,"method":"ping","params":"x"}` + "\n", passed: `{"jsonrpc":"2.0","id":8,"method":"ping","params":"x"}` + "\n"},
		{name: "neither request nor response", input: `{"jsonrpc":"2.0"}` + "\n", replies: []string{"-32600 null"}, logs: true},
		{name: "bad response dropped", input: `{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"x"}}` + "\n", logs: true},
		{name: "bad error object dropped", input: `{"jsonrpc":"2.0","id":9,"error":"x"}` + "\n", logs: true},
		{name: "string id not UTF-8", input: "{\"jsonrpc\":\"1\",\"id\":\"a\xff\",\"method\":\"ping\"}\n", replies: []string{"-32600 \"a\ufffd\""}, logs: true},
		{name: "too deep", input: `{"jsonrpc":"2.0","id":10,"method":"ping","params":{"a":` + strings.Repeat("[", 1001) + strings.Repeat("]", 1001) + "}}\n", replies: []string{"-32600 10"}, logs: true},
		{name: "empty batch", input: "[]\n", replies: []string{"-32600 null"}, logs: true},
		{
			name:    "batch",
			input:   `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":"r","result":{}},3,{"jsonrpc":"2.0","id":true,"method":"x"}]` + "\n",
			replies: []string{"[-32600 1, -32600 null, -32600 null]"},
			logs:    true,
		},
		{name: "batch of notifications", input: `[{"jsonrpc":"2.0","method":"notifications/initialized"}]` + "\n", logs: true},
		{name: "session goes on", input: "x\n42\n[]\n" + ping + "\n", passed: ping + "\n", replies: []string{"-32700 null", "-32600 null", "-32600 null"}, logs: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			passed, replies, logged := filter(t, tt.input, 0)
			if passed != tt.passed {
				t.Errorf("passed %q, want %q", passed, tt.passed)
			}
			if diff := cmp.Diff(tt.replies, replies); diff != "" {
				t.Errorf("replies (-want +got):\n%s", diff)
			}
			if got := logged != ""; got != tt.logs {
				t.Errorf("logged %q, want a log line: %v", logged, tt.logs)
			}
		})
	}
}

func TestFramingLongLines(t *testing.T) {
	const limit = 64
	pad := func(n int) string { return strings.Repeat("x", n) }
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	for _, tt := range []struct {
		name    string
		input   string
		passed  string
		replies []string
	}{
		{name: "at the limit", input: `{"jsonrpc":"2.0","id":1,"method":"` + pad(limit-36) + `"}` + "\n", passed: `{"jsonrpc":"2.0","id":1,"method":"` + pad(limit-36) + `"}` + "\n"},
		{name: "over the limit, id first", input: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"x":"` + pad(500) + `"}}` + "\n" + ping + "\n", passed: ping + "\n", replies: []string{"-32600 7"}},
		{name: "over the limit, id cut", input: `{"jsonrpc":"2.0","method":"tools/call","params":{"x":"` + pad(500) + `"},"id":7}` + "\n" + ping + "\n", passed: ping + "\n", replies: []string{"-32600 null"}},
		{name: "over the limit, not JSON", input: pad(500) + "\n" + ping + "\n", passed: ping + "\n", replies: []string{"-32600 null"}},
		{name: "over the limit, a response", input: `{"jsonrpc":"2.0","id":3,"result":{"x":"` + pad(500) + `"}}` + "\n" + ping + "\n", passed: ping + "\n"},
		{name: "over the limit at the end", input: pad(500), replies: []string{"-32600 null"}},
		{name: "longer than the read buffer", input: pad(3*readChunkBytes+5) + "\n" + ping + "\n", passed: ping + "\n", replies: []string{"-32600 null"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			passed, replies, logged := filter(t, tt.input, limit)
			if passed != tt.passed {
				t.Errorf("passed %q, want %q", passed, tt.passed)
			}
			if diff := cmp.Diff(tt.replies, replies); diff != "" {
				t.Errorf("replies (-want +got):\n%s", diff)
			}
			if got, want := strings.Contains(logged, "over the size limit"), tt.passed != tt.input; got != want {
				t.Errorf("log %q: says a line was dropped: %v, want %v", logged, got, want)
			}
		})
	}
}

// TestFramingFrameAtATime checks that one Read never mixes two frames, so
// the SDK's per-frame byte count only ever sees one message.
func TestFramingFrameAtATime(t *testing.T) {
	a := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	b := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	f, _ := newFraming(strings.NewReader(a+"\n"+b+"\n"), io.Discard, nil)
	for _, step := range []struct {
		size int
		want string
	}{
		{1000, a + "\n"}, // room for both, but only one is given
		{10, b[:10]},
		{1000, b[10:] + "\n"},
	} {
		buf := make([]byte, step.size)
		n, err := f.Read(buf)
		if err != nil || string(buf[:n]) != step.want {
			t.Fatalf("Read = %q, %v; want %q", buf[:n], err, step.want)
		}
	}
	if n, err := f.Read(make([]byte, 10)); n != 0 || err != io.EOF {
		t.Fatalf("Read at the end = %d, %v; want 0, EOF", n, err)
	}
}

// TestFramingMemoryIsBounded feeds a 64 MiB line that never ends and checks
// that the line buffer stays at the limit.
func TestFramingMemoryIsBounded(t *testing.T) {
	const limit = 1 << 20
	r := io.MultiReader(io.LimitReader(repeatReader('x'), 64<<20), strings.NewReader("\n"))
	f, _ := newFraming(r, io.Discard, nil)
	f.max = limit
	if _, err := io.ReadAll(f); err != nil {
		t.Fatal(err)
	}
	if c := cap(f.line); c > 2*limit {
		t.Errorf("line buffer grew to %d bytes for a %d-byte limit", c, limit)
	}
}

type repeatReader byte

func (r repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

func TestFramingLogIsLimited(t *testing.T) {
	var log bytes.Buffer
	f, _ := newFraming(strings.NewReader(strings.Repeat("garbage\n", 1000)), io.Discard, slog.New(slog.NewTextHandler(&log, nil)))
	if _, err := io.ReadAll(f); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(log.String(), "\n"); n != logBurst {
		t.Errorf("%d log lines for 1000 bad lines, want %d", n, logBurst)
	}
	// A line over the limit is always logged.
	log.Reset()
	f, _ = newFraming(strings.NewReader(strings.Repeat("garbage\n", 100)+strings.Repeat("x", 100)+"\n"), io.Discard, slog.New(slog.NewTextHandler(&log, nil)))
	f.max = 50
	if _, err := io.ReadAll(f); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "over the size limit") {
		t.Errorf("log %q does not mention the long line", log.String())
	}
}

// session is a real MCP server speaking through a framing, over pipes.
type session struct {
	t     testing.TB
	in    *io.PipeWriter
	lines chan string
	done  chan error
	seen  []string
	// replies holds replies not awaited yet, by id as JSON.
	replies map[string]map[string]any
}

// stubPolicy is a policy under which no call ever runs: there are no slots
// (MaxConcurrent 0) and, when the server is built with a cancelled context,
// every call that passes the schema ends as "cancelled before it started",
// without reaching the sandbox.
func stubPolicy() *policy.Policy {
	return &policy.Policy{
		Workspace:      "/nonexistent/workspace",
		Grants:         []policy.Grant{{Path: "/nonexistent/workspace", Writable: true, Dir: true, Flag: "--workspace"}},
		Timeout:        time.Second,
		MaxOutputBytes: 1 << 10,
	}
}

// startSession serves MCP in-process. With serve, it goes through Serve, as
// the binary does; without, through New with a cancelled context (see
// stubPolicy) and a framing, as Serve wires it.
func startSession(t testing.TB, serve bool, log io.Writer) *session {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &session{t: t, in: inW, lines: make(chan string, 1024), done: make(chan error, 1), replies: map[string]map[string]any{}}
	go func() {
		var err error
		if serve {
			err = Serve(context.Background(), unreachable(t), stubPolicy(), "test", nil, inR, outW, log)
		} else {
			cancelled, cancel := context.WithCancel(context.Background())
			cancel()
			lg := slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelWarn}))
			srv, _ := New(cancelled, unreachable(t), stubPolicy(), "test", lg)
			in, out := newFraming(inR, outW, lg)
			err = srv.Run(context.Background(), &mcp.IOTransport{Reader: io.NopCloser(in), Writer: nopWriteCloser{out}})
		}
		outW.Close()
		s.done <- err
	}()
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
		io.Copy(io.Discard, outR)
	}()
	return s
}

// initialize does the 2025-11-25 handshake.
func (s *session) initialize() {
	s.t.Helper()
	s.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if r := s.await(`"init"`); r["result"] == nil {
		s.t.Fatalf("initialize: %v", r)
	}
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

func (s *session) send(lines ...string) {
	for _, l := range lines {
		if _, err := io.WriteString(s.in, l+"\n"); err != nil {
			s.t.Fatalf("write: %v", err)
		}
	}
}

// await returns the reply to id, checking every line on the way.
func (s *session) await(id string) map[string]any {
	s.t.Helper()
	if r, ok := s.replies[id]; ok {
		delete(s.replies, id)
		return r
	}
	timeout := time.After(10 * time.Second)
	for {
		select {
		case line, ok := <-s.lines:
			if !ok {
				s.t.Fatalf("session ended before the reply to %s; last lines: %q", id, s.last())
			}
			s.seen = append(s.seen, line)
			for _, m := range checkLine(s.t, line) {
				if _, isRequest := m["method"]; isRequest {
					continue
				}
				raw, _ := json.Marshal(m["id"])
				s.replies[string(raw)] = m
			}
			if r, ok := s.replies[id]; ok {
				delete(s.replies, id)
				return r
			}
		case <-timeout:
			s.t.Fatalf("no reply to %s in 10s; last lines: %q", id, s.last())
		}
	}
}

func (s *session) last() []string { return s.seen[max(0, len(s.seen)-20):] }

// close ends the input and waits for the server to stop.
func (s *session) close() {
	s.t.Helper()
	s.in.Close()
	for range s.lines {
	}
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		s.t.Fatalf("server still running 10s after its input ended")
	}
}

// checkLine fails unless line is one JSON-RPC 2.0 message or a batch of
// them, and returns them.
func checkLine(t testing.TB, line string) []map[string]any {
	t.Helper()
	var msgs []map[string]any
	if strings.HasPrefix(line, "[") {
		if err := json.Unmarshal([]byte(line), &msgs); err != nil || len(msgs) == 0 {
			t.Fatalf("stdout line %q is not a JSON-RPC batch", line)
		}
	} else {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("stdout line %q is not a JSON object: %v", line, err)
		}
		msgs = []map[string]any{m}
	}
	for _, m := range msgs {
		if m["jsonrpc"] != "2.0" {
			t.Fatalf("stdout line %q is not JSON-RPC 2.0", line)
		}
	}
	return msgs
}

func errorCode(m map[string]any) float64 {
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(float64)
	return c
}

// TestSessionSurvivesBadInput drives Serve itself: the filter is in front of
// the SDK, every kind of bad line gets its answer, and the session serves
// the next request each time.
func TestSessionSurvivesBadInput(t *testing.T) {
	var log syncBuffer
	s := startSession(t, true, &log)
	defer s.close()
	s.initialize()

	long := `{"jsonrpc":"2.0","id":"long","method":"tools/call","params":{"name":"run_command","arguments":{"command":"cat","stdin":"` + strings.Repeat("x", mcp.DefaultMaxLineLength+1) + `"}}}`
	for i, tt := range []struct {
		name, line string
		id         string // of the error reply; "" for none
		code       float64
	}{
		{"not JSON", "this is not json", "null", jsonrpc.CodeParseError},
		{"not an object", `[1,2]`, "", 0},
		{"no version", `{"id":"nv","method":"ping"}`, `"nv"`, jsonrpc.CodeInvalidRequest},
		{"bad id", `{"jsonrpc":"2.0","id":[1],"method":"ping"}`, "null", jsonrpc.CodeInvalidRequest},
		{"unknown method", `{"jsonrpc":"2.0","id":"um","method":"no/such/method"}`, `"um"`, jsonrpc.CodeMethodNotFound},
		{"over 16 MiB", long, `"long"`, jsonrpc.CodeInvalidRequest},
		{"blank", "   ", "", 0},
	} {
		s.send(tt.line)
		if tt.id != "" {
			if r := s.await(tt.id); errorCode(r) != tt.code {
				t.Errorf("%s: reply %v, want error %v", tt.name, r, tt.code)
			}
		}
		id := fmt.Sprintf(`"after-%d"`, i)
		s.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/list"}`)
		if r := s.await(id); r["result"] == nil {
			t.Fatalf("after %s: tools/list got %v", tt.name, r)
		}
		delete(s.replies, "null") // so the next step's null-id error is its own
	}
	if !strings.Contains(log.String(), "over the size limit") {
		t.Errorf("stderr %q does not log the long line", log.String())
	}
}

// TestSessionWritesDoNotInterleave answers bad lines while the SDK answers
// good ones, and checks every stdout line is whole.
func TestSessionWritesDoNotInterleave(t *testing.T) {
	s := startSession(t, false, io.Discard)
	defer s.close()
	const n = 200
	go func() {
		for i := range n {
			io.WriteString(s.in, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`+"\nnot json %d\n", i, i))
		}
	}()
	for i := range n {
		s.await(fmt.Sprint(i))
	}
	errors := 0
	for _, l := range s.seen {
		if strings.Contains(l, `"code":-32700`) {
			errors++
		}
	}
	if errors < n-20 { // a few may still be on their way
		t.Errorf("saw %d parse errors for %d bad lines", errors, n)
	}
}

// TestToolCallThroughFraming checks the in-process server used by the fuzz
// targets: calls end refused or cancelled, never run.
func TestToolCallThroughFraming(t *testing.T) {
	s := startSession(t, false, io.Discard)
	defer s.close()
	s.initialize()
	for _, tt := range []struct {
		name, args string
		refused    bool // ends with isError (not a JSON-RPC error)
	}{
		{"valid", `{"command":"true"}`, true},
		{"extra argument", `{"command":"true","cwd":"/"}`, true},
		{"wrong type", `{"command":1}`, true},
		{"missing command", `{}`, true},
		{"not an object", `"true"`, false},
	} {
		s.send(`{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"run_command","arguments":` + tt.args + `}}`)
		r := s.await(`"c"`)
		res, _ := r["result"].(map[string]any)
		if tt.refused && (res == nil || res["isError"] != true) {
			t.Errorf("%s: got %v, want an isError result", tt.name, r)
		}
		if !tt.refused && res != nil && res["isError"] != true {
			t.Errorf("%s: got %v, want an error", tt.name, r)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for the server's logger and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

const sentinel = `"nanosandbox-fuzz-sentinel-5b1c"`

// FuzzFraming feeds arbitrary input through the filter, then through the
// real server: the filter passes on only what the SDK accepts, byte for
// byte; everything on stdout is JSON-RPC; and the session still answers a
// ping afterwards.
func FuzzFraming(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		"garbage\n{}\n[]\n42\n",
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"x"}]`,
		`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"x"}}`,
		"\r\n \t\n\xef\xbb\xbf{}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		const limit = 256
		passed, _, _ := filter(t, string(data), limit)
		// What passes is each good line, trimmed, in order, and each one
		// a single message the SDK decodes.
		var want []string
		for _, line := range strings.Split(string(data), "\n") {
			if len(line) > limit {
				continue
			}
			m := bytes.TrimSpace([]byte(line))
			if len(m) > 0 && m[0] == '{' && json.Valid(m) {
				if _, err := jsonrpc.DecodeMessage(m); err == nil {
					want = append(want, string(m)+"\n")
				}
			}
		}
		if got := passed; got != strings.Join(want, "") {
			t.Fatalf("passed %q, want %q", got, strings.Join(want, ""))
		}

		s := startSession(t, false, io.Discard)
		s.send(string(data), `{"jsonrpc":"2.0","id":`+sentinel+`,"method":"ping"}`)
		s.await(sentinel)
		s.close()
	})
}

// FuzzToolArguments sends arbitrary bytes as the arguments of a tools/call
// through the filter to the real server: no panic, a JSON-RPC reply to the
// call whenever the line is one message, a refusal rather than a run, and a
// session that goes on.
func FuzzToolArguments(f *testing.F) {
	for _, s := range []string{
		`{"command":"true"}`,
		`{"command":"sh","args":["-c","echo hi"],"stdin":"x"}`,
		`{"command":"true","cwd":"/"}`,
		`{"command":""}`,
		`{"command":"true","args":null}`,
		`{"command":"true","args":[1]}`,
		`{"command":"\u0000"}`,
		`{"command":"true","stdin":null}`,
		`[]`,
		`null`,
		`"x"`,
		`{"command":"true"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, args []byte) {
		s := startSession(t, false, io.Discard)
		defer s.close()
		s.initialize()
		line := `{"jsonrpc":"2.0","id":"call","method":"tools/call","params":{"name":"run_command","arguments":` + string(args) + `}}`
		s.send(line)
		// A reply to "call" is due when the line is one message with that
		// id (arguments can end the object early and add their own keys).
		var m struct {
			ID     any    `json:"id"`
			Method string `json:"method"`
		}
		if !bytes.ContainsRune([]byte(line), '\n') && json.Unmarshal([]byte(line), &m) == nil && m.ID == "call" {
			r := s.await(`"call"`)
			if res, ok := r["result"].(map[string]any); ok && res["isError"] != true {
				t.Fatalf("arguments %q: a call ran: %v", args, r)
			}
		}
		s.send(`{"jsonrpc":"2.0","id":` + sentinel + `,"method":"ping"}`)
		s.await(sentinel)
	})
}
