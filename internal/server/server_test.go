package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
	"github.com/nanosandbox/nanosandbox-mcp/internal/sandbox"
)

var update = flag.Bool("update", false, "rewrite golden files")

// The sandbox re-executes the running binary: in tests, this test binary.
func TestMain(m *testing.M) {
	if sandbox.IsChild() {
		sandbox.ChildMain()
	}
	os.Exit(m.Run())
}

// testPolicy is a policy with a workspace whose path the golden file names
// as WORKSPACE.
func testPolicy(t *testing.T) *policy.Policy {
	t.Helper()
	ws := t.TempDir()
	p, err := policy.New(policy.Options{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// runnerFunc is a Runner made of a function, whose limits are all off.
type runnerFunc func(ctx context.Context, c *sandbox.Command) (sandbox.Result, error)

func (f runnerFunc) Run(ctx context.Context, c *sandbox.Command) (sandbox.Result, error) {
	return f(ctx, c)
}

func (runnerFunc) Caveats() string { return "" }

// unreachable is a Runner for servers whose calls must all end before
// they run: t fails if one reaches it.
func unreachable(t testing.TB) Runner {
	var reached atomic.Int64
	t.Cleanup(func() {
		if n := reached.Load(); n > 0 {
			t.Errorf("%d calls reached the sandbox", n)
		}
	})
	return runnerFunc(func(_ context.Context, c *sandbox.Command) (sandbox.Result, error) {
		reached.Add(1)
		return sandbox.Result{}, errors.New("reached the sandbox")
	})
}

// connect returns a client session to an in-process server.
func connect(t *testing.T, sb Runner, p *policy.Policy) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	s, _ := New(ctx, sb, p, "test", slog.New(slog.NewTextHandler(io.Discard, nil)))
	ct, st := mcp.NewInMemoryTransports()
	if _, err := s.Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func TestToolsListGolden(t *testing.T) {
	p := testPolicy(t)
	cs := connect(t, unreachable(t), p)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// Through a map, so keys come out sorted.
	raw, _ := json.Marshal(res)
	var v any
	json.Unmarshal(raw, &v)
	got, _ := json.MarshalIndent(v, "", "  ")
	got = bytes.ReplaceAll(got, []byte(p.Workspace), []byte("WORKSPACE"))
	got = append(got, '\n')
	golden := filepath.Join("testdata", "tools_list.golden.json")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/server -update after a deliberate change)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("tools/list (-want +got):\n%s", diff)
	}
}

// TestToolDescribesNetwork: the model learns from the description which
// hosts it may reach, presets expanded, and the annotations say the world
// is open.
func TestToolDescribesNetwork(t *testing.T) {
	for _, tt := range []struct {
		name string
		o    policy.Options
		want string
		open bool
	}{
		{"none", policy.Options{}, "\nNo network: HTTP(S) gets 403 from the sandbox's proxy and other connections fail (the user can allow hosts with --allow-net). ", false},
		{"allow-list", policy.Options{AllowNet: []string{"pkg.example.test:443", "*.example.test", "127.0.0.1:8080"}}, "\nNetwork: HTTP(S) only, through the proxy that HTTP_PROXY and HTTPS_PROXY name, to pkg.example.test:443, *.example.test (ports 80, 443), 127.0.0.1:8080; any other host gets 403", true},
		{"host network", policy.Options{HostNetwork: true}, "\nNetwork: the host's, open to every host and port (--host-network)", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.o.Workspace = t.TempDir()
			p, err := policy.New(tt.o)
			if err != nil {
				t.Fatal(err)
			}
			res, err := connect(t, unreachable(t), p).ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			tool := res.Tools[0]
			if !strings.Contains(tool.Description, tt.want) {
				t.Errorf("description lacks %q:\n%s", tt.want, tool.Description)
			}
			if got := *tool.Annotations.OpenWorldHint; got != tt.open {
				t.Errorf("openWorldHint: got %v, want %v", got, tt.open)
			}
		})
	}
}

func TestRefusalsNeverReachTheSandbox(t *testing.T) {
	cs := connect(t, unreachable(t), testPolicy(t))
	for _, tt := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"extra property", map[string]any{"command": "ls", "cwd": "/"}, `refused: unknown argument "cwd"; run_command takes only command, args and stdin`},
		{"two extra properties", map[string]any{"command": "ls", "env": map[string]any{}, "cwd": "/"}, `refused: unknown arguments "cwd", "env"`},
		{"empty command", map[string]any{"command": ""}, "refused: command is empty"},
		{"missing command", map[string]any{"args": []string{"x"}}, "refused: command is missing"},
		{"no arguments", nil, "refused: no arguments"},
		{"command as array", map[string]any{"command": []string{"ls", "-la"}}, "refused: command is not a string"},
		{"args as string", map[string]any{"command": "ls", "args": "-la"}, "refused: args is not an array"},
		{"a number in args", map[string]any{"command": "head", "args": []any{"-n", 5}}, "refused: args[1] is not a string"},
		{"stdin as object", map[string]any{"command": "cat", "stdin": map[string]any{}}, "refused: stdin is not a string"},
		{"NUL byte", map[string]any{"command": "echo", "args": []string{"a\x00"}}, "refused: args[0] contains a NUL byte"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_command", Arguments: tt.args})
			if err != nil {
				t.Fatal(err)
			}
			txt := res.Content[0].(*mcp.TextContent).Text
			if !res.IsError || !strings.HasPrefix(txt, tt.want) || strings.Contains(txt, "internal error") {
				t.Errorf("got isError=%v %q, want a refusal starting %q", res.IsError, txt, tt.want)
			}
			sc, _ := json.Marshal(res.StructuredContent)
			if !strings.Contains(string(sc), `"exit_code":-1`) || !strings.Contains(string(sc), `"error":"refused: `) {
				t.Errorf("structured content: %s", sc)
			}
		})
	}
}

func TestPanicIsRecovered(t *testing.T) {
	// A panic in the handler must come back as an error result, and the
	// session must go on.
	panics := runnerFunc(func(context.Context, *sandbox.Command) (sandbox.Result, error) {
		panic("runner broke")
	})
	cs := connect(t, panics, testPolicy(t))
	for range 2 {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_command", Arguments: map[string]any{"command": "true"}})
		if err != nil {
			t.Fatal(err)
		}
		want := "internal error: runner broke; the server is still running, try again"
		if txt := res.Content[0].(*mcp.TextContent).Text; !res.IsError || txt != want {
			t.Fatalf("got isError=%v %q, want %q", res.IsError, txt, want)
		}
	}
}

// TestCallReachesTheRunner checks what a call that passes every check asks
// of the sandbox, and how the server words what comes back.
func TestCallReachesTheRunner(t *testing.T) {
	p := testPolicy(t)
	var got *sandbox.Command
	var stdin string
	run := runnerFunc(func(_ context.Context, c *sandbox.Command) (sandbox.Result, error) {
		got = c
		b, err := io.ReadAll(c.Stdin)
		if err != nil {
			t.Errorf("read stdin: %v", err)
		}
		stdin = string(b)
		io.WriteString(c.Stdout, "out\n")
		io.WriteString(c.Stderr, "err\n")
		return sandbox.Result{ExitCode: 3}, nil
	})
	cs := connect(t, run, p)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_command", Arguments: map[string]any{
		"command": "grep", "args": []string{"-c", "x"}, "stdin": "x\ny\n",
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got == nil {
		t.Fatal("the call never reached the runner")
	}
	if got.Path != "grep" || !slices.Equal(got.Args, []string{"-c", "x"}) || stdin != "x\ny\n" || got.Timeout != p.Timeout {
		t.Errorf("got command %q %q, stdin %q, timeout %v; want grep [-c x], stdin \"x\\ny\\n\", timeout %v", got.Path, got.Args, stdin, got.Timeout, p.Timeout)
	}
	want := "exit status 3\n--- stdout ---\nout\n--- stderr ---\nerr"
	if txt := res.Content[0].(*mcp.TextContent).Text; res.IsError || txt != want {
		t.Errorf("got isError=%v %q, want %q", res.IsError, txt, want)
	}
}

// TestInputKeysAreTheSchemas checks that what the decoder takes is what
// the schema lists, and what runCommandInput holds.
func TestInputKeysAreTheSchemas(t *testing.T) {
	s := inputSchema()
	var props []string
	for k := range s.Properties {
		props = append(props, k)
	}
	slices.Sort(props)
	order := slices.Sorted(slices.Values(inputKeys))
	var tags []string
	rt := reflect.TypeFor[runCommandInput]()
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		tags = append(tags, name)
	}
	slices.Sort(tags)
	if !slices.Equal(props, order) || !slices.Equal(props, tags) {
		t.Errorf("schema properties %q, property order %q, runCommandInput fields %q: want one set", props, order, tags)
	}
	if _, err := decodeInput(json.RawMessage(`{"command":"ls","args":["-l"],"stdin":"x"}`)); err != nil {
		t.Errorf("every key the schema lists: %v", err)
	}
}

func TestResult(t *testing.T) {
	h := &handler{pol: &policy.Policy{MaxOutputBytes: 64, Timeout: policy.DefaultTimeout}}
	capt := func(s string) *capture {
		c := newCapture(64)
		c.Write([]byte(s))
		return c
	}
	for _, tt := range []struct {
		name      string
		r         sandbox.Result
		err       error
		stdout    string
		isError   bool
		firstLine string
		exit      int
	}{
		{"exit 0", sandbox.Result{}, nil, "hi\n", false, "exit status 0", 0},
		{"exit 2 is data", sandbox.Result{ExitCode: 2}, nil, "", false, "exit status 2", 2},
		{"signal", sandbox.Result{ExitCode: -1, Signal: "SIGSEGV", SignalNo: 11}, nil, "", false, "killed by signal SIGSEGV", -1},
		{"timeout", sandbox.Result{ExitCode: -1, TimedOut: true, Signal: "SIGKILL"}, nil, "partial", true, "timed out after 50s; process group killed; partial output follows", -1},
		{"cancel", sandbox.Result{ExitCode: -1, Canceled: true}, nil, "", true, "cancelled; process group killed; partial output follows", -1},
		{"not found", sandbox.Result{}, &sandbox.StartError{Path: "pyhton3", NotFound: true, Err: "executable file not found in PATH inside the sandbox"}, "", true, `failed to start "pyhton3": executable file not found in PATH inside the sandbox; check the name`, -1},
		{"setup", sandbox.Result{}, &sandbox.SetupError{Op: "mount tmpfs /tmp", Err: "operation not permitted"}, "", true, "sandbox setup failed: mount tmpfs /tmp: operation not permitted", -1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, out := h.result(tt.r, tt.err, capt(tt.stdout), capt(""))
			txt := res.Content[0].(*mcp.TextContent).Text
			if res.IsError != tt.isError || !strings.HasPrefix(txt, tt.firstLine) || out.ExitCode != tt.exit || out.Stdout != tt.stdout {
				t.Errorf("got isError=%v exit=%d stdout=%q text=%q; want isError=%v exit=%d first line %q", res.IsError, out.ExitCode, out.Stdout, txt, tt.isError, tt.exit, tt.firstLine)
			}
			if tt.isError != (out.Error != "") {
				t.Errorf("got error field %q with isError=%v", out.Error, tt.isError)
			}
		})
	}
}

// TestDescriptionSaysWhatRlimitsMiss: where memory is limited per process,
// the model is told what is not counted; a cgroup's limit needs no words.
func TestDescriptionSaysWhatRlimitsMiss(t *testing.T) {
	p := testPolicy(t)
	if got := tool(p, sandbox.Mechanisms{Memory: sandbox.ByCgroup}.Caveats()).Description; got != p.Describe() {
		t.Errorf("with a cgroup: got %q, want the policy alone", got)
	}
	got := tool(p, sandbox.Mechanisms{Memory: sandbox.ByRlimit}.Caveats()).Description
	for _, want := range []string{"\nMemory is limited per process", "memfd", "pipe and socket buffers", "kernel memory"} {
		if !strings.HasPrefix(got, p.Describe()) || !strings.Contains(got, want) {
			t.Errorf("with rlimits: got %q, want the policy, then %q", got, want)
		}
	}
}

// TestOfflineNote: a failed name lookup is explained by the network the
// policy gives, and not at all on the host's network.
func TestOfflineNote(t *testing.T) {
	for _, tt := range []struct {
		name string
		o    policy.Options
		want string // the note's start, or "" for none
	}{
		{"no network", policy.Options{}, "network: commands have no network in this sandbox"},
		{"allow-list", policy.Options{AllowNet: []string{"pkg.example.test"}}, "network: in this sandbox only HTTP(S) through the proxy"},
		{"host network", policy.Options{HostNetwork: true}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.o.Workspace = t.TempDir()
			p, err := policy.New(tt.o)
			if err != nil {
				t.Fatal(err)
			}
			run := runnerFunc(func(_ context.Context, c *sandbox.Command) (sandbox.Result, error) {
				io.WriteString(c.Stderr, "curl: (6) Could not resolve host: pkg.example.test\n")
				return sandbox.Result{ExitCode: 6}, nil
			})
			res, err := connect(t, run, p).CallTool(context.Background(), &mcp.CallToolParams{Name: "run_command", Arguments: map[string]any{"command": "curl"}})
			if err != nil {
				t.Fatal(err)
			}
			text := res.Content[0].(*mcp.TextContent).Text
			got := ""
			if _, note, ok := strings.Cut(text, "\nnote: network: "); ok {
				got = "network: " + note
			}
			if !strings.HasPrefix(got, tt.want) || (tt.want == "") != (got == "") {
				t.Errorf("got note %q, want one starting %q", got, tt.want)
			}
		})
	}
}

// TestDuplicateArguments: a key given twice is refused, not decided by the
// last one (a client showing the first would approve another command).
func TestDuplicateArguments(t *testing.T) {
	for _, raw := range []string{
		`{"command":"echo","command":"id"}`,
		`{"command":"ls","args":["-l"],"args":["/"]}`,
		`{"command":"cat","stdin":"a","stdin":"b"}`,
		`{"command":"ls","comm\u0061nd":"id"}`,
	} {
		_, err := decodeInput(json.RawMessage(raw))
		if err == nil || !strings.Contains(err.Error(), "given twice") {
			t.Errorf("decodeInput(%s) = %v, want a refusal of the key given twice", raw, err)
		}
	}
	if _, err := decodeInput(json.RawMessage(`{"command":"ls","args":[{"a":1,"a":2}]}`)); err == nil || strings.Contains(err.Error(), "twice") {
		t.Errorf("a nested object: %v, want only the args refusal", err)
	}
}
