package cli

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
	"github.com/nanosandbox/nanosandbox-mcp/internal/sandbox"
)

// TestFail reports every kind of error the command line can end with: the
// ones that carry a hint print it, the others point to --check.
func TestFail(t *testing.T) {
	for _, tt := range []struct {
		name   string
		err    error
		stderr string
		code   int
	}{
		{
			"usage error", &usageError{msg: "no command after --", hint: "name the command to run"},
			"nanosandbox-mcp: error: no command after --\nnanosandbox-mcp: hint: name the command to run\n", exitUsage,
		},
		{
			"flag error", &policy.FlagError{Flag: "--writable", Value: "./out", Err: "no such directory", Hint: "create it first"},
			"nanosandbox-mcp: error: --writable \"./out\": no such directory\nnanosandbox-mcp: hint: create it first\n", exitUsage,
		},
		{
			"wrapped flag error", fmt.Errorf("policy: %w", &policy.FlagError{Flag: "--timeout", Err: "must not be negative", Hint: "pass 0 for none"}),
			"nanosandbox-mcp: error: --timeout: must not be negative\nnanosandbox-mcp: hint: pass 0 for none\n", exitUsage,
		},
		{
			"refusal", &sandbox.Refusal{Cause: "cannot create user namespaces", Fix: "allow them"},
			"nanosandbox-mcp: error: cannot create user namespaces\nnanosandbox-mcp: hint: allow them\n", exitRuntime,
		},
		{
			"anything else", &sandbox.SetupError{Op: "mount", Err: "operation not permitted"},
			"nanosandbox-mcp: error: sandbox setup failed: mount: operation not permitted\nnanosandbox-mcp: hint: run nanosandbox-mcp --check --workspace DIR to see which layer fails\n", exitRuntime,
		},
		{
			"plain error", errors.New("serve: broken pipe"),
			"nanosandbox-mcp: error: serve: broken pipe\nnanosandbox-mcp: hint: run nanosandbox-mcp --check --workspace DIR to see which layer fails\n", exitRuntime,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if code := fail(&b, tt.err); code != tt.code {
				t.Errorf("got exit code %d, want %d", code, tt.code)
			}
			if diff := cmp.Diff(tt.stderr, b.String()); diff != "" {
				t.Errorf("stderr (-want +got):\n%s", diff)
			}
		})
	}
}

// TestHinted checks that each error type with a hint gives it apart from
// its message, and that Error still reads as before.
func TestHinted(t *testing.T) {
	for _, tt := range []struct {
		name            string
		err             policy.Hinted
		msg, hint, full string
	}{
		{"usage error", &usageError{msg: "m", hint: "h"}, "m", "h", "m"},
		{"flag error", &policy.FlagError{Flag: "--memory", Value: "x", Err: "not a size", Hint: "h"}, `--memory "x": not a size`, "h", `--memory "x": not a size`},
		{"denial", &policy.Denial{Reason: "command is empty", Hint: "name a program"}, "refused: command is empty", "name a program", "refused: command is empty; name a program"},
		{"refusal", &sandbox.Refusal{Cause: "c", Fix: "f"}, "c", "f", "c"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			msg, hint := tt.err.Explain()
			if msg != tt.msg || hint != tt.hint || tt.err.Error() != tt.full {
				t.Errorf("got %q, %q, Error %q; want %q, %q, Error %q", msg, hint, tt.err.Error(), tt.msg, tt.hint, tt.full)
			}
		})
	}
}
