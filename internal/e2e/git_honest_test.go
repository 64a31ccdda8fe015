package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Protection must be invisible to honest git use: inside the sandbox, git
// in an ordinary repository behaves as it does outside.

// gitScript is what an agent runs every day; its output must match the
// same script run on the host in a copy of the repository.
const gitScript = `set -e
git status --porcelain
echo "status rc=$?"
git diff HEAD
git log --format=%s HEAD
git show --format=%s --stat HEAD | head -3
git reset -q HEAD && echo reset ok
mkdir -p junk/deeper && touch junk/deeper/x && git clean -fdq && test ! -e junk && echo clean ok
echo draft > untracked.txt
git stash -u -q && test ! -e untracked.txt && git stash pop -q && cat untracked.txt
git add -A && git commit -q -m "from the agent" && git show --name-only --format=%s HEAD
git status --porcelain
echo done`

func TestGitHonestUse(t *testing.T) {
	setup := func(e *env) {
		e.write(filepath.Join(e.home, ".gitconfig"), identity, 0o644)
		e.gitRepo()
		e.git("-c", "user.name=Host", "-c", "user.email=host@example.com", "commit", "-q", "--allow-empty", "-m", "second")
	}
	// Outside: a copy of the same repository.
	host := newEnv(t)
	setup(host)
	cmd := exec.Command("sh", "-c", gitScript)
	cmd.Dir = host.ws
	cmd.Env = append(append([]string(nil), host.vars...), "GIT_CEILING_DIRECTORIES="+filepath.Dir(host.ws))
	wantB, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("outside: %v\n%s", err, wantB)
	}
	want := string(wantB)
	if !strings.Contains(want, "from the agent\n\nuntracked.txt\n") || !strings.HasSuffix(want, "done\n") {
		t.Fatalf("the script does not do what it should even outside:\n%s", want)
	}

	t.Run("one-shot", func(t *testing.T) {
		e := newEnv(t)
		setup(e)
		got := e.mustAllow(nil, gitScript)
		if got != want {
			t.Errorf("inside:\n%s\noutside:\n%s", got, want)
		}
	})
	t.Run("mcp", func(t *testing.T) {
		e := newEnv(t)
		setup(e)
		s := e.serve()
		res, out := s.sh(t, gitScript+" 2>&1")
		if out.ExitCode != 0 || out.Stdout != want {
			t.Errorf("inside: %s\noutside:\n%s", text(res), want)
		}
		if strings.Contains(text(res), "note:") {
			t.Errorf("honest use got a note: %s", text(res))
		}
		// The host sees the commit, and nothing the sandbox added.
		if st := e.git("status", "--porcelain", "--ignored"); st != "" {
			t.Errorf("the host's git status after the calls: %q", st)
		}
		if got := strings.TrimSpace(e.git("log", "-1", "--format=%s")); got != "from the agent" {
			t.Errorf("the host's last commit: %q", got)
		}
	})
}

func TestGitNestedRepositoriesStayUsable(t *testing.T) {
	e := newEnv(t)
	e.write(filepath.Join(e.home, ".gitconfig"), identity, 0o644)
	e.gitRepo()
	s := e.serve()
	res, out := s.sh(t, `git init -q sub && echo s > sub/f && git -C sub add f && git -C sub commit -q -m s &&
mkdir a && git -C a init -q && echo a > a/f && git -C a add f && git -C a commit -q -m a && git clone -q ./a ./b && echo made`)
	if out.Stdout != "made\n" || strings.Contains(text(res), "note:") {
		t.Fatalf("making nested repositories: %s", text(res))
	}
	res, out = s.sh(t, `git -C sub status --porcelain && echo t >> sub/f && git -C sub commit -qam t && git -C sub log --format=%s | head -1 &&
git -C b pull -q && git -C b log --format=%s && echo ok`)
	if out.Stdout != "t\na\nok\n" {
		t.Errorf("using them in the next call: %s", text(res))
	}
	// Trusted now: protected like the workspace's own.
	res, out = s.sh(t, `git -C sub config core.fsmonitor x`)
	if out.ExitCode == 0 || !strings.Contains(text(res), "read-only inside the sandbox") {
		t.Errorf("a nested repository's config after it was trusted: %s", text(res))
	}
}

func TestGitSubmoduleWork(t *testing.T) {
	e := newEnv(t)
	e.write(filepath.Join(e.home, ".gitconfig"), identity, 0o644)
	lib := filepath.Join(e.home, "lib")
	for _, args := range [][]string{{"init", "-q", lib}, {"-C", lib, "commit", "-q", "--allow-empty", "-m", "lib"}} {
		e.git(args...)
	}
	e.gitRepo()
	e.git("-c", "protocol.file.allow=always", "submodule", "add", "-q", lib, "lib")
	e.git("commit", "-q", "-m", "add lib")
	s := e.serve()
	res, out := s.sh(t, `git submodule status >/dev/null && echo x > lib/new && git -C lib add new && git -C lib commit -q -m inside && git add lib && git commit -q -m bump && git status --porcelain && echo ok`)
	if out.Stdout != "ok\n" {
		t.Errorf("committing in a submodule: %s", text(res))
	}
}

// A workspace with no repository has no .git after a call, and tools that
// look for one (go build stamps the VCS revision) work.
func TestGitNoRepositoryNoTrace(t *testing.T) {
	e := newEnv(t)
	goBin, err := exec.LookPath("go")
	for _, p := range []string{"/usr/local/go/bin/go", "/usr/lib/go/bin/go"} {
		if err != nil {
			goBin, err = p, nil
			if _, serr := os.Stat(p); serr != nil {
				err = serr
			}
		}
	}
	if err != nil {
		t.Skip("needs the go tool (on PATH, or in /usr/local/go or /usr/lib/go)")
	}
	e.write("go.mod", "module example.com/x\n\ngo 1.22\n", 0o644)
	e.write("main.go", "package main\n\nfunc main() {}\n", 0o644)
	res := e.mustAllow(nil, `ls -a; `+goBin+` build -o "${TMPDIR:-/tmp}/x" . && echo built`)
	if !strings.Contains(res, "built") {
		t.Errorf("go build: %s", res)
	}
	if strings.Contains(res, ".git") || strings.Contains(res, "HEAD") {
		t.Errorf("the workspace shows an entry of the sandbox's: %s", res)
	}
	ents, _ := os.ReadDir(e.ws)
	for _, en := range ents {
		if en.Name() != "README" && en.Name() != "go.mod" && en.Name() != "main.go" {
			t.Errorf("left in the workspace: %s", en.Name())
		}
	}
}

// The commondir stand-in a trusted repository holds while calls run is
// inert for libgit2 too: cargo, which finds repositories with it, still
// finds the user's on the host during a call, and cargo new nests none.
func TestGitStandInsInertForLibgit2(t *testing.T) {
	cargo, err := exec.LookPath("cargo")
	if err != nil {
		if p := filepath.Join(os.Getenv("HOME"), ".cargo", "bin", "cargo"); fileExists(p) {
			cargo = p
		} else {
			t.Skip("needs cargo (a reader of repositories with libgit2)")
		}
	}
	e := newEnv(t)
	e.gitRepo()
	cargoNew := func(name string) bool {
		cmd := exec.Command(cargo, "new", "-q", name)
		cmd.Dir = e.ws
		cmd.Env = append(os.Environ(), "CARGO_HOME="+filepath.Join(os.Getenv("HOME"), ".cargo"))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("cargo new: %v\n%s", err, out)
		}
		return fileExists(filepath.Join(e.ws, name, ".git"))
	}
	if cargoNew("control") {
		t.Fatal("control: with no call running, cargo nests a repository in the workspace's: the test tests nothing")
	}
	s := e.serve()
	call := s.callAsync(context.Background(), map[string]any{"command": "sh", "args": []string{"-c", "sleep 3"}})
	standIn := filepath.Join(e.ws, ".git", "commondir")
	for i := 0; i < 100 && !fileExists(standIn); i++ {
		time.Sleep(20 * time.Millisecond)
	}
	if !fileExists(standIn) {
		t.Fatal("no commondir stand-in while the call runs: the test tests nothing")
	}
	if cargoNew("inner") {
		t.Error("with the stand-in in place, cargo took the workspace for no repository and nested one")
	}
	if r := <-call; r.err != nil {
		t.Fatal(r.err)
	}
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// A bare repository another tracks as test data (testdata/fix.git, as
// libgit2's and go-git's fixtures are): no stand-in appears in it, which
// git status would list and git add -A commit, and a checkout that
// rewrites its config and hooks succeeds (from the eleventh git red-team
// round).
func TestGitTrackedBareFixture(t *testing.T) {
	e := newEnv(t)
	e.hostSh(`set -e
export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@example.com GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@example.com
git init -q -b main
git init -q --bare testdata/fix.git
echo k > testdata/fix.git/refs/heads/.keep && echo k > testdata/fix.git/objects/.keep
git add -A && git commit -qm init && git checkout -qb other
printf '[core]\n\tbare = true\n\trepositoryformatversion = 0\n' > testdata/fix.git/config
echo '#!/bin/sh' > testdata/fix.git/hooks/pre-commit.sample
git commit -qam other && git checkout -q main`)
	out, stderr, code := e.sh(`git status --porcelain; echo ---; git checkout -q other && git status --porcelain && echo checked-out`)
	if code != 0 || out != "---\nchecked-out\n" {
		t.Errorf("status %d, stdout %q, want a clean status and checkout\nstderr: %s", code, out, stderr)
	}
	if strings.Contains(stderr, "aside") {
		t.Errorf("the fixture was judged:\n%s", stderr)
	}
	if st, _ := e.gitTry("status", "--porcelain"); st != "" {
		t.Errorf("the user's git status after the call: %q", st)
	}
}
