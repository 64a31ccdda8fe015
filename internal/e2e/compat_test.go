package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestConfig03x: a client configuration written for nanosandbox-mcp 0.3.x,
// the program this one replaces under the same package names, starts this
// server unchanged. The arguments are those its README gave (the command
// before them, npx -y nanosandbox-mcp or uvx nanosandbox-mcp, is the
// launcher's; .ci/dist-test runs them through both), at each handshake
// version a client of 0.3.x may ask for; run_command takes command, args
// and stdin, and refuses any other argument.
func TestConfig03x(t *testing.T) {
	e := newEnv(t)
	ro, err := os.MkdirTemp("", "nsb-config03x-ro-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(ro) })
	rw, err := os.MkdirTemp("", "nsb-config03x-rw-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(rw) })
	for _, d := range []*string{&ro, &rw} {
		if *d, err = filepath.EvalSymlinks(*d); err != nil {
			t.Fatal(err)
		}
		os.Chmod(*d, 0o755)
	}
	e.write(filepath.Join(ro, "settings"), "from the read-only path\n", 0o644)

	for _, tt := range []struct {
		name     string
		args     []string
		protocol string
	}{
		{"README example", []string{"--workspace", e.ws}, "2025-11-25"},
		{"README example, 2025-06-18 handshake", []string{"--workspace", e.ws}, "2025-06-18"},
		{"README example, 2025-03-26 handshake", []string{"--workspace", e.ws}, "2025-03-26"},
		{"README example, 2024-11-05 handshake", []string{"--workspace", e.ws}, "2024-11-05"},
		{"documented flags", []string{"--workspace", e.ws, "--read-only", ro, "--writable", rw,
			"--timeout", "30", "--memory", "512M", "--max-concurrent", "2", "--env", "GREETING=hello"}, "2025-11-25"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := e.in(t).rawStart(tt.args, tt.protocol)
			var init struct {
				Result struct {
					ProtocolVersion string `json:"protocolVersion"`
				} `json:"result"`
			}
			if err := json.Unmarshal(r.seen[0], &init); err != nil || init.Result.ProtocolVersion != tt.protocol {
				t.Fatalf("initialize at %s: got %s", tt.protocol, r.seen[0])
			}

			var list struct {
				Result struct {
					Tools []struct {
						Name        string `json:"name"`
						InputSchema struct {
							Properties           map[string]json.RawMessage `json:"properties"`
							Required             []string                   `json:"required"`
							AdditionalProperties *bool                      `json:"additionalProperties"`
						} `json:"inputSchema"`
					} `json:"tools"`
				} `json:"result"`
			}
			if err := json.Unmarshal(r.request("tools/list", map[string]any{}), &list); err != nil {
				t.Fatal(err)
			}
			if len(list.Result.Tools) != 1 || list.Result.Tools[0].Name != "run_command" {
				t.Fatalf("tools/list: got %+v, want run_command alone", list.Result.Tools)
			}
			schema := list.Result.Tools[0].InputSchema
			var props []string
			for p := range schema.Properties {
				props = append(props, p)
			}
			slices.Sort(props)
			if !slices.Equal(props, []string{"args", "command", "stdin"}) || !slices.Equal(schema.Required, []string{"command"}) ||
				schema.AdditionalProperties == nil || *schema.AdditionalProperties {
				t.Fatalf("run_command input: properties %v, required %v, additionalProperties %v; want args, command, stdin; command; false",
					props, schema.Required, schema.AdditionalProperties)
			}

			_, isError, out := r.call(map[string]any{"command": "sh", "args": []string{"-c", "cat; echo \"$0\"", "an argument"}, "stdin": "from stdin\n"})
			if isError || out.ExitCode != 0 || out.Stdout != "from stdin\nan argument\n" {
				t.Errorf("command, args and stdin: got isError %v, %+v", isError, out)
			}
			_, isError, out = r.call(map[string]any{"command": "sh", "args": []string{"-c", "exit 3"}})
			if isError || out.ExitCode != 3 {
				t.Errorf("a non-zero exit: got isError %v, %+v; want exit 3 as an ordinary result", isError, out)
			}
			for _, extra := range []string{"cwd", "timeout", "env"} {
				_, isError, _ = r.call(map[string]any{"command": "true", extra: "x"})
				if !isError {
					t.Errorf("an extra argument %q: got a result, want it refused", extra)
				}
			}
			if !slices.Contains(tt.args, "--writable") {
				return
			}
			_, isError, out = r.call(map[string]any{"command": "sh", "args": []string{"-c",
				`cat "$1/settings" && echo "$GREETING" > "$2/out" && cat "$2/out" && ! echo x > "$1/settings"`, "sh", ro, rw}})
			if isError || out.ExitCode != 0 || !strings.HasPrefix(out.Stdout, "from the read-only path\nhello\n") {
				t.Errorf("--read-only, --writable and --env: got isError %v, %+v", isError, out)
			}
		})
	}
}
