package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A workspace or --writable path that would let commands break what the
// tool description promises, or that commands could not use, is refused at
// start, with the reason and what to pass instead.

func TestWorkspaceOverHomeRefused(t *testing.T) {
	e := newEnv(t)
	bashrc := filepath.Join(e.home, ".bashrc")
	for _, tt := range []struct {
		name  string
		flags []string
		want  string
	}{
		{"workspace is the home", []string{"--workspace", e.home}, "is your home directory"},
		{"workspace above the home", []string{"--workspace", filepath.Dir(e.home)}, "contains your home directory " + e.home},
		{"writable home", []string{"--workspace", e.ws, "--writable", e.home}, "is your home directory"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := append(append([]string(nil), tt.flags...), "--", "sh", "-c", `echo 'echo pwned' >> "$HOME/.bashrc"`)
			stdout, stderr, code := e.runRaw(args...)
			if code != 2 || stdout != "" || !strings.Contains(stderr, "nanosandbox-mcp: error: ") || !strings.Contains(stderr, tt.want) || !strings.Contains(stderr, "nanosandbox-mcp: hint: ") {
				t.Errorf("got exit %d, stdout %q, stderr %q; want exit 2 with an error naming the home and a hint", code, stdout, stderr)
			}
			if _, err := os.Lstat(bashrc); err == nil {
				t.Fatalf("~/.bashrc was written on the host")
			}
		})
	}
	// The home shown read-only is what the hint offers.
	if out, _, code := e.run([]string{"--read-only", e.home}, "cat", filepath.Join(e.home, "notes.txt")); code != 0 || !strings.Contains(out, "home notes") {
		t.Errorf("--read-only ~: got exit %d %q", code, out)
	}
}

// TestWorkspaceNotWritableRefused: a workspace (or --writable path) that
// commands could not write is refused at start, in both forms, instead of
// failing at the first call.
func TestWorkspaceNotWritableRefused(t *testing.T) {
	e := newEnv(t)
	ro := filepath.Join(e.home, "ro")
	if err := os.Mkdir(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(ro, 0o755) })
	for _, tt := range []struct {
		name  string
		flags []string
		flag  string
	}{
		{"workspace", []string{"--workspace", ro}, "--workspace"},
		{"writable", []string{"--workspace", e.ws, "--writable", ro}, "--writable"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, form := range [][]string{{"--", "sh", "-c", "touch made"}, nil} { // one-shot, then serving
				stdout, stderr, code := e.runRaw(append(append([]string(nil), tt.flags...), form...)...)
				if code != 2 || stdout != "" || !strings.Contains(stderr, "nanosandbox-mcp: error: "+tt.flag+` "`+ro+`": commands cannot write it`) || !strings.Contains(stderr, "nanosandbox-mcp: hint: ") {
					t.Errorf("%v: got exit %d, stdout %q, stderr %q; want exit 2 saying commands cannot write it, with a hint", form, code, stdout, stderr)
				}
			}
		})
	}
	// Once it is writable, it works.
	os.Chmod(ro, 0o755)
	if _, stderr, code := e.runRaw("--workspace", ro, "--", "sh", "-c", "touch made"); code != 0 {
		t.Errorf("writable again: exit %d %q", code, stderr)
	}
}
