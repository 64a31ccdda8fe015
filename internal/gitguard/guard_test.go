package gitguard

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fixture is a writable root with a home beside it, and a guard on it.
type fixture struct {
	t      *testing.T
	root   string // the writable root
	home   string // the user's home: PWNED lands here
	git    string
	marker string
	g      *Guard
	cfg    Config
	walk   bool       // walk at every call, as one-shot mode does, instead of watching
	user   [][]string // more git commands userGit runs in each directory
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("needs git on PATH")
	}
	// Canonical, as the guard's roots are: on macOS /var is /private/var,
	// and the guard follows no symlink.
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, root: filepath.Join(dir, "ws"), home: filepath.Join(dir, "home"), git: git}
	f.marker = filepath.Join(f.home, "PWNED")
	for _, d := range []string{f.root, f.home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f.cfg = Config{Roots: []Root{{Host: f.root}}, Git: git, Home: f.home,
		GlobalConfigs: []string{filepath.Join(f.home, ".gitconfig")}, Log: func(m string) { t.Log(m) }}
	return f
}

func (f *fixture) start() *Guard {
	f.t.Helper()
	g, err := New(f.cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	if !f.walk {
		if err := g.Watch(); err != nil {
			f.t.Fatal(err)
		}
	}
	f.t.Cleanup(g.Close)
	f.g = g
	return g
}

// pwn is a shell command that leaves the marker: what an attacker plants.
func (f *fixture) pwn() string { return "touch " + f.marker + "; false" }

// sh runs a script in the root as a command would (without a sandbox: the
// guard's unit tests check judgment, not enforcement).
func (f *fixture) sh(script string) string {
	f.t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = f.root
	cmd.Env = append(f.env(), "PWN="+f.pwn())
	out, err := cmd.CombinedOutput()
	if err != nil {
		f.t.Fatalf("%s: %v\n%s", script, err, out)
	}
	return string(out)
}

func (f *fixture) env() []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + f.home, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=A", "GIT_AUTHOR_EMAIL=a@example.com", "GIT_COMMITTER_NAME=A", "GIT_COMMITTER_EMAIL=a@example.com"}
}

// userGit runs what a user's tools run in dir, and reports whether anything
// planted ran.
func (f *fixture) userGit(dirs ...string) bool {
	f.t.Helper()
	os.Remove(f.marker)
	for _, d := range dirs {
		for _, args := range append([][]string{{"status"}, {"commit", "-q", "--allow-empty", "-m", "user"}, {"submodule", "foreach", "--recursive", "true"}}, f.user...) {
			cmd := exec.Command(f.git, append([]string{"-C", filepath.Join(f.root, d)}, args...)...)
			cmd.Env = f.env()
			cmd.Run()
		}
	}
	_, err := os.Lstat(f.marker)
	return err == nil
}

// call runs script as one call between Begin and End.
func (f *fixture) call(script string) []string {
	f.t.Helper()
	c, err := f.g.Begin()
	if err != nil {
		f.t.Fatal(err)
	}
	if script != "" {
		f.sh(script)
	}
	return c.End()
}

func TestParseListing(t *testing.T) {
	got, err := parseListing([]byte("core.bare\x00core.fsmonitor\nx y\x00remote.Or.ig.url\na\nb\x00a.b.c\n1\x00"))
	if err != nil {
		t.Fatal(err)
	}
	want := []entry{
		{Section: "core", Name: "bare"},
		{Section: "core", Name: "fsmonitor", Value: "x y", HasValue: true},
		{Section: "remote", Subsection: "Or.ig", Name: "url", Value: "a\nb", HasValue: true},
		{Section: "a", Subsection: "b", Name: "c", Value: "1", HasValue: true},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(entry{})); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, bad := range []string{"core.bare", "nodot\x00", ".x\x00", "core.\x00"} {
		if _, err := parseListing([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestParseGitfile(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		in, want string
		ok       bool
	}{
		{"gitdir: /x/y\n", "/x/y", true},
		{"gitdir: /x/y\r\n\n", "/x/y", true},
		{"gitdir: ../m\n", filepath.Join(filepath.Dir(dir), "m"), true},
		{"gitdir:/x\n", "", false}, // git wants the space
		{"gitdir: \n", "", false},
		{"GITDIR: /x\n", "", false},
		{"gitdir: /x\x00y", "", false},
		{"", "", false},
	} {
		got, err := parseGitfile([]byte(tt.in), dir)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("%q: got %q, %v; want %q ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestJudgeConfigAsksGit(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("needs git")
	}
	list := gitLister(git)
	long := strings.Repeat("a", 1<<20+10)
	for _, tt := range []struct{ name, cfg, want string }{
		{"what git init writes", "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n", ""},
		{"a clone", "[remote \"origin\"]\n\turl = /x\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n", ""},
		{"fsmonitor", "[core]\n\tfsmonitor = evil\n", "it sets core.fsmonitor"},
		{"hooksPath", "[core]\n\thooksPath = /tmp\n", "it sets core.hookspath"},
		// Two parsers, two answers: git ends a comment at the newline.
		{"comment ending in a backslash", "# a comment \\\n[core]\n\tfsmonitor = evil\n", "it sets core.fsmonitor"},
		{"a line over 1 MiB", "[core]\n\tx = " + long + "\n\tfsmonitor = evil\n", "it sets core.x"},
		{"include", "[include]\n\tpath = /x\n", "it sets include.path"},
		{"includeIf", "[includeIf \"gitdir:/\"]\n\tpath = /x\n", "it sets includeif.gitdir:/.path"},
		{"legacy subsection", "[filter.X]\n\tclean = evil\n", "it sets filter.x.clean"},
		{"an alias", "[alias]\n\tst = !evil\n", "it sets alias.st"},
		{"push.default simple", "[push]\n\tdefault = simple\n", ""},
		{"push.default matching", "[push]\n\tdefault = matching\n", "it sets push.default"},
		{"a group-shared repository", "[core]\n\tsharedRepository = group\n", ""},
		{"a world-writable repository", "[core]\n\tsharedRepository = 0777\n", "it sets core.sharedrepository"},
		{"a repository shared with everybody", "[core]\n\tsharedRepository = everybody\n", "it sets core.sharedrepository"},
		{"bad syntax", "[core\n", "git could not read it"},
		{"a NUL byte hides nothing", "[core]\n\tbare = \x00\n\tfsmonitor = x\n", "it sets core.fsmonitor"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := judgeConfig(list, []byte(tt.cfg))
			if !strings.HasPrefix(got, tt.want) || (tt.want == "") != (got == "") {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
