package e2e

import (
	"os"
	"path/filepath"
	"regexp"
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
		{"host git relative", []string{"--host-git", "bin/git"}, `--host-git "bin/git": not an absolute path`},
		{"memory too small", []string{"--memory", "10MiB"}, `--memory "10MiB": too small`},
		{"file size too small", []string{"--max-file-size", "1000KB"}, `--max-file-size "1000KB": too small`},
		{"network before the command", []string{"--allow-net", "--", "true"}, "--allow-net needs a value"},
		{"a URL for a host", []string{"--allow-net", "https://example.com", "--", "true"}, `--allow-net "https://example.com": not a host`},
		{"no such preset", []string{"--allow-net", "@nmp", "--", "true"}, `--allow-net "@nmp": no such preset`},
		{"a bad port", []string{"--allow-net", "example.com:0", "--", "true"}, `--allow-net "example.com:0": not a port`},
		{"every host", []string{"--allow-net", "*", "--", "true"}, `--allow-net "*": would allow every host`},
		{"host network and an allow-list", []string{"--check", "--host-network", "--allow-net", "example.com"}, "--host-network: cannot go with --allow-net"},
		{"a proxy in --env", []string{"--allow-net", "@npm", "--env", "HTTPS_PROXY=http://proxy.example:3128", "--", "true"}, `--env "HTTPS_PROXY": set by the sandbox`},
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

// TestCheckNetwork: --check expands a preset into its hosts, each with why
// the preset lists it, and shows the tool description's network sentence.
func TestCheckNetwork(t *testing.T) {
	e := newEnv(t)
	stdout, stderr, _ := e.runRaw("--check", "--workspace", e.ws, "--allow-net", "@pypi", "--allow-net", "127.0.0.1:8080")
	for _, re := range []string{
		`\nreachable     HTTP\(S\) through the server's proxy, to these only:\n(              +[a-z.]+:443 +@pypi: [^\n]+\n){2,}              +127\.0\.0\.1:8080 +port 8080\n`,
		`Network: HTTP\(S\) only, through the proxy that HTTP_PROXY and HTTPS_PROXY name, to ([a-z.]+:443 \(@pypi\), ){2,}127\.0\.0\.1:8080;`,
	} {
		if !regexp.MustCompile(re).MatchString(stdout) {
			t.Errorf("--check does not match %s:\n%s%s", re, stdout, stderr)
		}
	}
	stdout, stderr, code := e.runRaw("--check", "--workspace", e.ws)
	if code != 0 || !strings.Contains(stdout, "reachable     none: own network namespace, loopback only\n") || !strings.Contains(stdout, "No network: HTTP(S) gets 403") {
		t.Errorf("--check without network: exit %d\n%s%s", code, stdout, stderr)
	}
}

// A grant or a derived path reached through a symbolic link where
// commands write: they could point it elsewhere before the next start.
// A --writable through one is refused at start; a global ignore file
// through one is not carried; the next start never grants or reads what
// a command re-pointed it to.
func TestThroughWritableLinks(t *testing.T) {
	e := newEnv(t)
	scratch := filepath.Join(e.home, "scratch")
	if err := os.MkdirAll(scratch, 0o755); err != nil {
		t.Fatal(err)
	}
	e.own(scratch)
	if err := os.Symlink(scratch, filepath.Join(e.ws, "out")); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := e.runRaw("--workspace", e.ws, "--writable", filepath.Join(e.ws, "out"), "--", "true")
	if code != 2 || !strings.Contains(stderr, "a symbolic link where commands write") || !strings.Contains(stderr, "hint: pass the place it leads to, "+scratch) {
		t.Errorf("--writable through a link in the workspace: exit %d, %s", code, stderr)
	}
	if _, stderr, code := e.runRaw("--workspace", e.ws, "--writable", scratch, "--", "true"); code != 0 {
		t.Errorf("--writable of the place itself: exit %d, %s", code, stderr)
	}
	// The user's global ignore file is a link in the workspace (a dotfiles
	// checkout); a command points it at a credential.
	e.write(filepath.Join(e.home, ".gitconfig"), identity+"[core]\n\texcludesFile = "+filepath.Join(e.ws, "gitignore")+"\n", 0o644)
	e.write("dotfiles-ignore", ".env\n", 0o644)
	if err := os.Symlink(filepath.Join(e.ws, "dotfiles-ignore"), filepath.Join(e.ws, "gitignore")); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := e.sh("rm gitignore && ln -s " + filepath.Join(e.home, ".ssh", "id_ed25519") + " gitignore"); code != 0 {
		t.Fatal(stderr)
	}
	stdout, _, _ := e.sh("cat ~/.config/git/ignore 2>&1")
	if strings.Contains(stdout, secretValue) {
		t.Errorf("the next start copied a credential into the private home: %q", stdout)
	}
}
