package e2e

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The rows of DESIGN.md §7 whose mechanics differ on macOS, where there
// are no mounts: the real home is not writable at all and HOME is the
// private home at its own path; limits macOS cannot hold are refused;
// names spelled in another case reach the same files.

func TestEscapeHomeWritesMacOS(t *testing.T) {
	e := newEnv(t)
	names := func() []string {
		ents, _ := os.ReadDir(e.home)
		var out []string
		for _, d := range ents {
			if d.Name() != "Library" { // the private homes live in its caches
				out = append(out, d.Name())
			}
		}
		return out
	}
	before := names()
	creds := map[string]string{}
	for _, c := range []string{".ssh", ".aws", ".netrc", "notes.txt"} {
		creds[c] = snapshot(t, filepath.Join(e.home, c))
	}
	h := e.home
	for _, script := range []string{
		`echo planted > ` + h + `/planted.txt`,
		`mkdir -p ` + h + `/.ssh && echo ssh-ed25519 AAAA planted >> ` + h + `/.ssh/authorized_keys`,
		`echo 'echo pwned' >> ` + h + `/.zshrc`,
		`echo overwritten > ` + h + `/notes.txt`,
		`mkdir -p ` + h + `/Library/LaunchAgents && echo x > ` + h + `/Library/LaunchAgents/evil.plist`,
	} {
		e.mustDeny(nil, script)
	}
	if got := names(); !slices.Equal(got, before) {
		t.Errorf("the host's home changed: got %v, want %v", got, before)
	}
	for c, want := range creds {
		if got := snapshot(t, filepath.Join(e.home, c)); got != want {
			t.Errorf("host %s changed:\n%s\nwant:\n%s", c, got, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(h, "Library/LaunchAgents")); err == nil {
		t.Errorf("~/Library/LaunchAgents was made on the host")
	}
	// HOME is the private home, which persists across calls.
	e.mustAllow(nil, `test "$HOME" != `+h+` && echo planted > "$HOME/planted.txt"`)
	if m, _ := filepath.Glob(filepath.Join(cacheDir(e.home), "homes/*/planted.txt")); len(m) != 1 {
		t.Errorf("planted.txt is not in exactly one private home: %v", m)
	}
	if out := e.mustAllow(nil, `cat "$HOME/planted.txt"`); out != "planted\n" {
		t.Errorf("the next call reads %q from the private home, want %q", out, "planted\n")
	}
}

// TestLimitRefusedOnMacOS: what macOS cannot hold is refused at start with
// what to do instead, and --check says what holds the rest.
func TestLimitRefusedOnMacOS(t *testing.T) {
	e := newEnv(t)
	for _, tt := range []struct {
		flag, value, cause string
	}{
		{"--memory", "1GiB", "--memory cannot be held on macOS"},
		{"--tmp-size", "64MiB", "--tmp-size cannot be held on macOS"},
		{"--cpus", "1", "--cpus needs cgroup v2"},
	} {
		_, stderr, code := e.runRaw("--workspace", e.ws, tt.flag, tt.value, "--", "true")
		if code != 1 || !strings.Contains(stderr, "error: "+tt.cause) || !strings.Contains(stderr, "hint: ") {
			t.Errorf("%s %s: got exit %d, stderr %q; want a refusal with a hint", tt.flag, tt.value, code, stderr)
		}
	}
	stdout, stderr, code := e.runRaw("--check", "--workspace", e.ws)
	for _, want := range []string{
		"seatbelt      ok    /usr/bin/sandbox-exec",
		"memory         none",
		"processes      1024 (rlimit per user)",
		"file size      4 GiB (rlimit)",
		"cpu time       10m0s per process (rlimit)",
		"verdict       ok: the policy holds",
	} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("--check (exit %d) does not say %q:\n%s%s", code, want, stdout, stderr)
		}
	}
}

// TestEscapeSetugidMacOS: no command leaves a file that runs with more
// rights than its runner's.
func TestEscapeSetugidMacOS(t *testing.T) {
	e := newEnv(t)
	e.write("plain", "#!/bin/sh\n", 0o755)
	for _, script := range []string{`chmod u+s plain`, `chmod g+s plain`, `chmod 6755 plain`} {
		e.mustDeny(nil, script)
		if fi, err := os.Stat(filepath.Join(e.ws, "plain")); err != nil || fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
			t.Errorf("%s: plain is %v on the host (%v)", script, fi.Mode(), err)
		}
	}
	e.mustAllow(nil, `chmod 700 plain && chmod 755 plain`)
}

// TestEscapeGitCaseMacOS: a macOS volume is case-insensitive by default,
// and git there opens .GIT/CONFIG for .git/config: the protections hold
// whatever the spelling.
func TestEscapeGitCaseMacOS(t *testing.T) {
	e := newEnv(t)
	e.gitRepo()
	if _, err := os.Stat(filepath.Join(e.ws, ".GIT", "CONFIG")); err != nil {
		t.Skip("this volume is case-sensitive")
	}
	dotgit := filepath.Join(e.ws, ".git")
	state := func() string {
		return snapshot(t, filepath.Join(dotgit, "hooks")) + "\n" + snapshot(t, filepath.Join(dotgit, "config"))
	}
	before := state()
	for _, script := range []string{
		`echo '[core]fsmonitor = x' >> .GIT/CONFIG`,
		`echo '[core]fsmonitor = x' >> .Git/Config`,
		`echo 'touch pwned' >> .git/HOOKS/pre-commit`,
		`printf '#!/bin/sh\ntouch pwned\n' > .GIT/hooks/post-checkout`,
		`mv .GIT .git.old`,
		`mv .git/HOOKS x`,
	} {
		e.mustDeny(nil, script)
		if got := state(); got != before {
			t.Fatalf("%s: protected git files changed on the host:\n%s\nwant:\n%s", script, got, before)
		}
	}
}

// TestEscapeProcessInfoMacOS: a command reads nothing of the server's
// environment or arguments, nor lists the host's processes.
func TestEscapeProcessInfoMacOS(t *testing.T) {
	e := newEnv(t)
	s := e.serve()
	spid := strconv.Itoa(s.cmd.Process.Pid)
	res, out := s.sh(t, `ps -wwE -o command= -p `+spid+`; ps -axww -o pid=,command=; ps -wwE -o command= -p $PPID`)
	all := out.Stdout + out.Stderr + text(res)
	if strings.Contains(all, secretValue) || strings.Contains(all, "NSB_TEST_SECRET") {
		t.Errorf("the server's environment is visible:\n%s", all)
	}
	for _, line := range strings.Split(out.Stdout, "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == spid {
			t.Errorf("ps lists the server: %s", line)
		}
	}
}
