package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestTimeoutTakesSeconds: --timeout takes a duration, or plain seconds as
// configurations written for 0.3.x pass it.
func TestTimeoutTakesSeconds(t *testing.T) {
	for _, tt := range []struct {
		value string
		want  time.Duration
		err   string
	}{
		{"30", 30 * time.Second, ""},
		{"0", 0, ""},
		{"90s", 90 * time.Second, ""},
		{"2m", 2 * time.Minute, ""},
		{"1h30m", 90 * time.Minute, ""},
		{"1.5", 0, "missing unit"},
		{"-5", 0, "missing unit"},
		{"-5s", -5 * time.Second, ""}, // refused later by the policy
		{"30x", 0, "unknown unit"},
		{"", 0, "invalid duration"},
	} {
		t.Run(tt.value, func(t *testing.T) {
			f := newFlags()
			err := f.set.Parse([]string{"--timeout=" + tt.value})
			switch {
			case tt.err != "":
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("got %v, want an error with %q", err, tt.err)
				}
			case err != nil:
				t.Errorf("got %v, want no error", err)
			case f.timeout != tt.want:
				t.Errorf("got %v, want %v", f.timeout, tt.want)
			}
		})
	}
}

// TestRenamedFlags: each 0.3.x flag this program does not take is refused
// before anything else happens (exit 2), naming the flag and what to pass
// instead; an unknown flag of no version keeps the general hint.
func TestRenamedFlags(t *testing.T) {
	for flag, hint := range renamedFlags {
		t.Run(flag, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Main(context.Background(), "test", []string{"--workspace", t.TempDir(), "--" + flag, "x"}, strings.NewReader(""), &stdout, &stderr)
			want := "nanosandbox-mcp: error: unknown flag --" + flag + " (a flag of nanosandbox-mcp 0.3.x)\nnanosandbox-mcp: hint: " + hint + "\n"
			if code != exitUsage || stderr.String() != want || stdout.Len() != 0 {
				t.Errorf("got exit %d, stderr %q, stdout %q; want exit %d, stderr %q", code, stderr.String(), stdout.String(), exitUsage, want)
			}
		})
	}
	var stderr bytes.Buffer
	code := Main(context.Background(), "test", []string{"--no-such-flag"}, strings.NewReader(""), &bytes.Buffer{}, &stderr)
	if want := "nanosandbox-mcp: error: unknown flag: --no-such-flag\nnanosandbox-mcp: hint: run nanosandbox-mcp --help for every option\n"; code != exitUsage || stderr.String() != want {
		t.Errorf("got exit %d, stderr %q; want exit %d, stderr %q", code, stderr.String(), exitUsage, want)
	}
}

// TestFlagGivenTwiceOrEmpty: a flag that takes one value, given twice, is
// refused rather than decided by the last (a client config with two
// --workspace flags must not run commands in the one it did not mean), as
// is an empty path; repeatable flags and switches stay repeatable.
func TestFlagGivenTwiceOrEmpty(t *testing.T) {
	ws := t.TempDir()
	for _, tt := range []struct {
		args []string
		want string // "" for no refusal of this kind
	}{
		{[]string{"--workspace", ws, "--workspace", ws + "/x"}, "--workspace is given twice"},
		{[]string{"--workspace", ws, "--timeout", "5", "--timeout=6"}, "--timeout is given twice"},
		{[]string{"--workspace", ws, "--read-only", ""}, "--read-only is given an empty path"},
		{[]string{"--workspace", ws, "--writable="}, "--writable is given an empty path"},
		{[]string{"--workspace", ""}, "--workspace is given an empty path"},
		{[]string{"--workspace", ws, "--read-only", "/usr", "--read-only", "/etc", "--version"}, ""},
	} {
		var stdout, stderr bytes.Buffer
		code := Main(context.Background(), "test", tt.args, strings.NewReader(""), &stdout, &stderr)
		if tt.want == "" {
			if code != exitOK {
				t.Errorf("%q: exit %d, stderr %q", tt.args, code, stderr.String())
			}
			continue
		}
		if code != exitUsage || !strings.Contains(stderr.String(), "error: "+tt.want) || !strings.Contains(stderr.String(), "hint: ") || stdout.Len() != 0 {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 and %q", tt.args, code, stderr.String(), tt.want)
		}
	}
}
