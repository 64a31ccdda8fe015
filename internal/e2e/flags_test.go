package e2e

import (
	"strings"
	"testing"
)

// TestBadFlagSaysWhatWasTyped: a refused value is quoted as the user typed
// it, and each mistake gets its own message.
func TestBadFlagSaysWhatWasTyped(t *testing.T) {
	e := newEnv(t)
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"output too large", []string{"--max-output", "1MiB"}, `--max-output "1MiB": out of range`},
		{"output too small", []string{"--max-output", "100"}, `--max-output "100": out of range`},
		{"no concurrency", []string{"--max-concurrent", "0"}, `--max-concurrent "0": out of range`},
		{"too much concurrency", []string{"--max-concurrent", "0x200"}, `--max-concurrent "0x200": out of range`},
		{"memory too small", []string{"--memory", "10MiB"}, `--memory "10MiB": too small`},
		{"file size too small", []string{"--max-file-size", "1000KB"}, `--max-file-size "1000KB": too small`},
		{"network before the command", []string{"--allow-net", "--", "true"}, "--allow-net is not available yet"},
		{"a flag given -- as its value", []string{"--timeout", "--", "true"}, "--timeout needs a value"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := e.runRaw(append([]string{"--workspace", e.ws}, tt.args...)...)
			if code != 2 || stdout != "" || !strings.Contains(stderr, "nanosandbox-mcp: error: "+tt.want) || !strings.Contains(stderr, "nanosandbox-mcp: hint: ") {
				t.Errorf("got exit %d, stdout %q, stderr %q; want exit 2 with error: %s and a hint", code, stdout, stderr, tt.want)
			}
		})
	}
}

// TestSizeUnits: KB, MB, GB and TB are decimal (SI) units, K, M, G, T and
// KiB, MiB, GiB, TiB binary ones, as in GNU coreutils; --check shows each
// limit the way it was meant.
func TestSizeUnits(t *testing.T) {
	linuxOnly(t, "--memory (refused on macOS)")
	e := newEnv(t)
	for _, tt := range []struct{ memory, want string }{
		{"4GB", "memory         4 GB "},
		{"4G", "memory         4 GiB "},
		{"4GiB", "memory         4 GiB "},
		{"1500MB", "memory         1.5 GB "},
		{"512mb", "memory         512 MB "},
	} {
		stdout, stderr, code := e.runRaw("--check", "--workspace", e.ws, "--memory", tt.memory)
		if code != 0 || !strings.Contains(stdout, tt.want) {
			t.Errorf("--memory %s: got exit %d, want %q in:\n%s%s", tt.memory, code, tt.want, stdout, stderr)
		}
	}
	stdout, _, _ := e.runRaw("--help")
	if !strings.Contains(stdout, "KB, MB, GB") || !strings.Contains(stdout, "KiB") {
		t.Errorf("--help does not say which units are decimal:\n%s", stdout)
	}
}
