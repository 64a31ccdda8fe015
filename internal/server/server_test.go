package server

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
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

// connect returns a client session to an in-process server.
func connect(t *testing.T, sb *sandbox.Sandbox, p *policy.Policy) *mcp.ClientSession {
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
	cs := connect(t, nil, p)
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

func TestRefusalsNeverReachTheSandbox(t *testing.T) {
	// With a nil sandbox, any call that got past the checks would panic and
	// come back as an internal error instead of a refusal.
	cs := connect(t, nil, testPolicy(t))
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
	// A nil sandbox makes Run panic: the call must come back as an error
	// result and the session must go on.
	cs := connect(t, nil, testPolicy(t))
	for range 2 {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_command", Arguments: map[string]any{"command": "true"}})
		if err != nil {
			t.Fatal(err)
		}
		if txt := res.Content[0].(*mcp.TextContent).Text; !res.IsError || !strings.HasPrefix(txt, "internal error") {
			t.Fatalf("got isError=%v %q, want an internal error result", res.IsError, txt)
		}
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
	if got := tool(p, sandbox.Mechanisms{Memory: "cgroup"}).Description; got != p.Describe() {
		t.Errorf("with a cgroup: got %q, want the policy alone", got)
	}
	got := tool(p, sandbox.Mechanisms{Memory: "rlimit"}).Description
	for _, want := range []string{"\nMemory is limited per process", "memfd", "pipe and socket buffers", "kernel memory"} {
		if !strings.HasPrefix(got, p.Describe()) || !strings.Contains(got, want) {
			t.Errorf("with rlimits: got %q, want the policy, then %q", got, want)
		}
	}
}
