package server

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
	"github.com/nanosandbox/nanosandbox-mcp/internal/sandbox"
)

func TestEscapeControls(t *testing.T) {
	for _, tt := range []struct {
		in, want string
		n        int
	}{
		{"plain\ttext\n", "plain\ttext\n", 0},
		{"héllo ✓", "héllo ✓", 0},
		{"\x1b[2J\x1b]52;c;ZWNobw==\x07", `\x1b[2J\x1b]52;c;ZWNobw==\x07`, 3},
		{"50%\r100%\r\n", "50%\r100%\r\n", 0}, // progress lines, CRLF
		{"bell\a\r", `bell\x07` + "\r", 1},
		{"nul\x00 del\x7f bs\x08", `nul\x00 del\x7f bs\x08`, 3},
		{"c1 \u009b31m \u0085", `c1 \u009b31m \u0085`, 2},
		{"not utf-8 \xff\x9b", "not utf-8 \xff\x9b", 0}, // left to JSON's U+FFFD and binaryNote
		{"\u00a0nbsp and \u2028", "\u00a0nbsp and \u2028", 0},
	} {
		if got := escapeControls(tt.in, false); got != tt.want {
			t.Errorf("%q: got %q, want %q", tt.in, got, tt.want)
		}
		if got := controls(tt.in); got != tt.n {
			t.Errorf("%q: counted %d, want %d", tt.in, got, tt.n)
		}
	}
	if got, want := escapeControls("a\nb\tc\x1b\r", true), `a\x0ab\x09c\x1b\x0d`; got != want {
		t.Errorf("with newlines: got %q, want %q", got, want)
	}
}

// TestResultEscapesControls: the text block shows control characters
// escaped and says so; the structured stdout and stderr keep them.
func TestResultEscapesControls(t *testing.T) {
	h := &handler{pol: &policy.Policy{MaxOutputBytes: 256, Timeout: policy.DefaultTimeout}}
	capt := func(s string) *capture {
		c := newCapture(256)
		c.Write([]byte(s))
		return c
	}
	const osc52 = "\x1b]52;c;ZWNobyBwd25lZA==\x07"
	res, out := h.result(sandbox.Result{Notes: []string{"git: moved aside evil\nnote: forged"}}, nil, capt("ok "+osc52+"\n"), capt("\x1b[31mred\x1b[0m\n"))
	txt := res.Content[0].(*mcp.TextContent).Text
	if strings.ContainsAny(txt, "\x1b\x07") {
		t.Errorf("the text block holds raw control characters: %q", txt)
	}
	for _, want := range []string{
		"--- stdout ---\nok \\x1b]52;c;ZWNobyBwd25lZA==\\x07\n",
		"--- stderr ---\n\\x1b[31mred\\x1b[0m\n",
		"\nnote: git: moved aside evil\\x0anote: forged\n",
		"\nnote: stdout held 2 control characters",
		"\nnote: stderr held 2 control characters",
	} {
		if !strings.Contains(txt, want) {
			t.Errorf("text %q lacks %q", txt, want)
		}
	}
	if strings.Contains(txt, "\nnote: forged") {
		t.Errorf("a note's newline starts a line of its own: %q", txt)
	}
	if out.Stdout != "ok "+osc52+"\n" || out.Stderr != "\x1b[31mred\x1b[0m\n" {
		t.Errorf("structured output changed: %q %q", out.Stdout, out.Stderr)
	}
	if notes := out.Notes; len(notes) != 3 || notes[0] != `git: moved aside evil\x0anote: forged` {
		t.Errorf("notes %q, want the sandbox's with what it quotes escaped, then two on control characters", notes)
	}
}
