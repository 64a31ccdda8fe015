package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The attacks of issue #8, and more: each plants, in one or more calls,
// something the user's own git would run later, outside the sandbox. After
// them, the user's git status, commit, "git -C sub status" and "git
// submodule foreach" in the workspace run nothing planted, one-shot and
// over MCP. A positive control makes the same planting on the host and
// sees it run, so that each attack is one.

// privateHome is where the server keeps the commands' HOME for e's
// workspace, on the host.
func (e *env) privateHome() string {
	ws, err := filepath.EvalSymlinks(e.ws)
	if err != nil {
		e.t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(ws))
	return filepath.Join(cacheDir(e.home), "homes", filepath.Base(ws)+"-"+hex.EncodeToString(sum[:6]))
}

// pwned is what the planted commands leave, in the real home, which the
// sandbox hides: only the user's git outside can create it.
func (e *env) pwned() string { return filepath.Join(e.home, "PWNED") }

// expand fills an attack script in: $PWN is the planted command, $PH the
// private home's host path, $OTHER a project of the user's outside the
// workspace. (Inside the sandbox, $HOME is the private home.)
func (e *env) expand(script string) string {
	return strings.NewReplacer("$PWN", `touch `+e.pwned()+`; false`, "$PH", e.privateHome(),
		"$OTHER", filepath.Join(e.home, "other")).Replace(script)
}

// userGit runs, on the host, what the user's tools run in the workspace
// and in dirs below it, and reports whether anything planted ran.
func (e *env) userGit(dirs ...string) bool {
	e.t.Helper()
	os.Remove(e.pwned())
	for _, d := range append([]string{"."}, dirs...) {
		for _, args := range [][]string{
			{"status"}, {"diff", "HEAD"}, {"log", "-1"},
			{"-c", "user.name=U", "-c", "user.email=u@example.com", "commit", "-q", "--allow-empty", "-m", "user"},
			{"submodule", "foreach", "--recursive", "true"},
		} {
			e.gitTry(append([]string{"-C", filepath.Join(e.ws, d)}, args...)...)
		}
	}
	_, err := os.Lstat(e.pwned())
	return err == nil
}

// hostSh runs script on the host in the workspace, as the positive control
// does, with HOME the private home as the command would have it.
func (e *env) hostSh(script string) {
	e.t.Helper()
	os.MkdirAll(e.privateHome(), 0o700)
	e.own(e.privateHome())
	cmd := exec.Command("sh", "-c", script)
	if e.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: e.cred}
	}
	cmd.Dir = e.ws
	cmd.Env = append(append([]string(nil), e.vars...), "HOME="+e.privateHome(),
		"GIT_AUTHOR_NAME=A", "GIT_AUTHOR_EMAIL=a@example.com", "GIT_COMMITTER_NAME=A", "GIT_COMMITTER_EMAIL=a@example.com")
	if out, err := cmd.CombinedOutput(); err != nil {
		e.t.Logf("control step %q: %v\n%s", script, err, out)
	}
}

type plantAttack struct {
	name  string
	setup func(e *env) // the user's, on the host, before the server starts
	steps []string     // one call each
	dirs  []string     // where the user runs git afterwards
}

func userRepo(e *env) { e.gitRepo() }

// identity is the user's, in their global config: the server passes it to
// commands, so that an attack's commits work inside.
const identity = "[user]\n\tname = U\n\temail = u@example.com\n"

// plantEnv is a fresh environment with the user's identity configured.
func plantEnv(t *testing.T) *env {
	e := newEnv(t)
	e.write(filepath.Join(e.home, ".gitconfig"), identity, 0o644)
	return e
}

var plantAttacks = []plantAttack{
	{name: "nested repository registered as a submodule", setup: userRepo,
		steps: []string{`git init -q sub && git -C sub commit -q --allow-empty -m s && git -C sub config core.fsmonitor "$PWN" && git add sub`},
		dirs:  []string{"sub"}},
	{name: "submodule whose .git is a symlink", setup: userRepo,
		steps: []string{`git init -q .x && git -C .x commit -q --allow-empty -m s && git -C .x config core.fsmonitor "$PWN" &&
mkdir sub && ln -s ../.x/.git sub/.git && git update-index --add --cacheinfo 160000,$(git -C .x rev-parse HEAD),sub`},
		dirs: []string{"sub"}},
	{name: "submodule git directory in the private home, armed later", setup: userRepo,
		steps: []string{
			`git init -q --bare "$HOME/m.git" && git -C "$HOME/m.git" config core.bare false && mkdir sub && git --git-dir="$HOME/m.git" --work-tree=sub commit -q --allow-empty -m s &&
printf 'gitdir: %s\n' "$PH/m.git" > sub/.git && git update-index --add --cacheinfo 160000,$(git --git-dir="$HOME/m.git" rev-parse HEAD),sub`,
			`git config -f "$HOME/m.git/config" core.fsmonitor "$PWN"`,
		},
		dirs: []string{"sub"}},
	{name: "submodule git directory in the private home, made later", setup: userRepo,
		steps: []string{
			`mkdir sub && printf 'gitdir: %s\n' "$PH/later.git" > sub/.git`,
			`git init -q --bare "$HOME/later.git" && git -C "$HOME/later.git" config core.bare false && git -C "$HOME/later.git" config core.fsmonitor "$PWN"`,
		},
		dirs: []string{"sub"}},
	{name: "a comment line ending in a backslash", setup: userRepo,
		steps: []string{`git init -q sub && printf '# note \\\n[core]\n\tfsmonitor = "%s"\n' "$PWN" >> sub/.git/config`},
		dirs:  []string{"sub"}},
	{name: "a config line over 1 MiB", setup: userRepo,
		steps: []string{`git init -q sub && { printf '[core]\n\tx = '; head -c 1100000 /dev/zero | tr '\0' a; printf '\n\tfsmonitor = "%s"\n' "$PWN"; } >> sub/.git/config`},
		dirs:  []string{"sub"}},
	{name: "a gitlink only in the split index", setup: userRepo,
		steps: []string{`git init -q sub && git -C sub commit -q --allow-empty -m s && git -C sub config core.fsmonitor "$PWN" && git add sub && git update-index --split-index`},
		dirs:  []string{"sub"}},
	{name: "a submodule of a submodule", setup: userRepo,
		steps: []string{`git init -q a && git -C a commit -q --allow-empty -m a && git init -q a/b && git -C a/b commit -q --allow-empty -m b &&
git -C a/b config core.fsmonitor "$PWN" && git -C a add b && git -C a commit -q -m b && git add a`},
		dirs: []string{"a", "a/b"}},
	{name: "a repository that existed below the workspace",
		setup: func(e *env) {
			e.gitRepo()
			e.git("init", "-q", "lib")
			e.write("lib/.git/hooks/pre-commit", "#!/bin/sh\nexit 0\n", 0o755)
		},
		steps: []string{`echo 'true; $PWN' >> lib/.git/hooks/pre-commit; git -C lib config core.fsmonitor "$PWN"; printf '#!/bin/sh\n%s\n' "$PWN" > lib/.git/hooks/post-commit; chmod +x lib/.git/hooks/post-commit`},
		dirs:  []string{"lib"}},
	{name: "a repository where there was none",
		steps: []string{`git init -q && printf '#!/bin/sh\n%s\n' "$PWN" > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit && git config core.fsmonitor "$PWN"`}},
	{name: "the workspace made a bare repository",
		steps: []string{`git init -q --bare . && git config -f config core.bare false && git config -f config core.worktree "$PWD" && git config -f config core.fsmonitor "$PWN"`}},
	{name: "commondir of the user's repository", setup: userRepo,
		steps: []string{`git init -q --bare .e && git -C .e config core.bare false && git -C .e config core.fsmonitor "$PWN" && echo ../.e > .git/commondir`}},
	{name: "a symlinked hooks directory",
		setup: func(e *env) {
			e.gitRepo()
			os.Rename(filepath.Join(e.ws, ".git/hooks"), filepath.Join(e.ws, ".githooks"))
			os.Symlink("../.githooks", filepath.Join(e.ws, ".git/hooks"))
		},
		steps: []string{`printf '#!/bin/sh\n%s\n' "$PWN" > .githooks/post-commit; chmod +x .githooks/post-commit; rm -f .git/hooks; mkdir .git/hooks; printf '#!/bin/sh\n%s\n' "$PWN" > .git/hooks/post-commit; chmod +x .git/hooks/post-commit`}},
	{name: "an include the user's config names",
		setup: func(e *env) {
			e.gitRepo()
			e.git("config", "include.path", "../shared.gitconfig")
		},
		steps: []string{`printf '[core]\n\tfsmonitor = "%s"\n' "$PWN" > shared.gitconfig`}},
	{name: "a relative core.hooksPath in the user's global config",
		setup: func(e *env) {
			e.write(filepath.Join(e.home, ".gitconfig"), identity+"[core]\n\thooksPath = .githooks\n", 0o644)
			e.gitRepo()
		},
		steps: []string{`mkdir -p .githooks && printf '#!/bin/sh\n%s\n' "$PWN" > .githooks/pre-commit && chmod +x .githooks/pre-commit`}},
	{name: "husky's hooks directory, absent at the start",
		setup: func(e *env) {
			e.gitRepo()
			e.git("config", "core.hooksPath", ".husky/_")
		},
		steps: []string{`mkdir -p .husky/_ && printf '#!/bin/sh\n%s\n' "$PWN" > .husky/_/pre-commit && chmod +x .husky/_/pre-commit`}},
	{name: "config.worktree with the extension on",
		setup: func(e *env) {
			e.gitRepo()
			e.git("config", "extensions.worktreeConfig", "true")
		},
		steps: []string{`git config --worktree core.fsmonitor "$PWN" || printf '[core]\n\tfsmonitor = "%s"\n' "$PWN" > .git/config.worktree`}},
	{name: "a linked worktree's config", setup: userRepo,
		steps: []string{`git worktree add -q wt && git config extensions.worktreeConfig true; printf '[core]\n\tfsmonitor = "%s"\n' "$PWN" > .git/worktrees/wt/config.worktree`},
		dirs:  []string{"wt"}},
	{name: "a directory hidden from the scan", setup: userRepo,
		steps: []string{`git init -q d/sub && git -C d/sub config core.fsmonitor "$PWN" && chmod 000 d`},
		dirs:  []string{"d/sub"}},
}

func TestEscapeGitPlanted(t *testing.T) {
	for _, tt := range plantAttacks {
		t.Run(tt.name, func(t *testing.T) { runPlantAttack(t, tt) })
	}
}

// runPlantAttack runs one planting: its control on the host, then one-shot
// and over MCP, each followed by the user's git.
func runPlantAttack(t *testing.T, tt plantAttack) {
	t.Run("control", func(t *testing.T) {
		e := plantEnv(t)
		if tt.setup != nil {
			tt.setup(e)
		}
		for _, s := range tt.steps {
			e.hostSh(e.expand(s))
		}
		if strings.Contains(tt.name, "hidden from the scan") {
			os.Chmod(filepath.Join(e.ws, "d"), 0o755) // the user, later
		}
		if !e.userGit(tt.dirs...) {
			t.Fatal("planted on the host, nothing ran in the user's git: the attack tests nothing")
		}
	})
	t.Run("one-shot", func(t *testing.T) {
		e := plantEnv(t)
		if tt.setup != nil {
			tt.setup(e)
		}
		var notes []string
		for _, s := range tt.steps {
			_, stderr, _ := e.sh(e.expand(s))
			notes = append(notes, stderr)
		}
		os.Chmod(filepath.Join(e.ws, "d"), 0o755)
		if e.userGit(tt.dirs...) {
			t.Errorf("the user's git ran what the sandbox planted\nstderr of the calls: %q", notes)
		}
	})
	t.Run("mcp", func(t *testing.T) {
		e := plantEnv(t)
		if tt.setup != nil {
			tt.setup(e)
		}
		s := e.serve()
		var texts []string
		for _, step := range tt.steps {
			res, _ := s.sh(t, e.expand(step))
			texts = append(texts, text(res))
		}
		os.Chmod(filepath.Join(e.ws, "d"), 0o755)
		if e.userGit(tt.dirs...) {
			t.Errorf("the user's git ran what the sandbox planted\nresults: %q", texts)
		}
		t.Logf("results: %q", texts)
		// And the server still answers.
		if _, out := s.sh(t, "echo ok"); out.Stdout != "ok\n" {
			t.Errorf("the next call: %+v", out)
		}
	})
}

// A redirection out of the writable roots is moved aside with the same note
// whether or not something is there: the note must not tell the model what
// exists outside.
func TestEscapeGitRedirectRevealsNothing(t *testing.T) {
	e := newEnv(t)
	e.gitRepo()
	secret := filepath.Join(e.home, "private-project")
	e.git("init", "-q", secret)
	s := e.serve()
	res1, _ := s.sh(t, `mkdir a && echo "gitdir: `+secret+`/.git" > a/.git`)
	res2, _ := s.sh(t, `mkdir b && echo "gitdir: `+secret+`/nothing" > b/.git`)
	norm := func(s string) string { return strings.NewReplacer("a/.git", "X/.git", "b/.git", "X/.git").Replace(s) }
	if !strings.Contains(text(res1), "points outside the writable roots") || norm(text(res1)) != norm(text(res2)) {
		t.Errorf("the results differ with what exists outside:\n%s\n---\n%s", text(res1), text(res2))
	}
}

// Hostile files where the server used to read: none of them hangs or grows
// the server, and the next call is answered.
func TestEscapeGitHostileFiles(t *testing.T) {
	e := newEnv(t)
	e.gitRepo()
	s := e.serve()
	for _, script := range []string{
		`rm -f .git/index && mkfifo .git/index`,
		`rm -f .git/index && ln -s /dev/zero .git/index`,
		`rm -f .git/index && truncate -s 1500M .git/index`,
		`rm -f .git/index && head -c 4096 /dev/urandom > .git/index`,
		`printf 'DIRC\0\0\0\4\377\377\377\377' > .git/index`,
		`mkdir -p f && mkfifo f/.git`,
		`mkdir -p z && ln -s /dev/zero z/.git`,
		`git init -q c && rm c/.git/config && mkfifo c/.git/config`,
		`git init -q d && truncate -s 1500M d/.git/config`,
		`git init -q h && mkdir -p h/.git/hooks && cd h/.git/hooks && seq 1 3000 | xargs touch`,
		`mkdir -p deep && cd deep && for i in $(seq 1 200); do mkdir d && cd d; done && git init -q && git config core.fsmonitor x`,
	} {
		res, out := s.sh(t, script)
		if out.Error != "" && !strings.HasPrefix(out.Error, "exit status") {
			t.Errorf("%q: %s", script, text(res))
		}
		if _, out := s.sh(t, "echo ok"); out.Stdout != "ok\n" {
			t.Fatalf("after %q the server did not answer: %+v", script, out)
		}
	}
	if runtime.GOOS == "linux" { // macOS shows no process's peak from outside
		peak := vmHWM(t, s.cmd.Process.Pid)
		t.Logf("server peak resident memory: %d MiB", peak>>20)
		if peak > 100<<20 {
			t.Errorf("the server's peak resident memory is %d MiB, want under 100", peak>>20)
		}
	}
	if e.userGit("deep/d/d") {
		t.Error("planted code ran")
	}
}

// vmHWM is a process's peak resident memory in bytes.
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/proc", itoa(pid), "status"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			var kb int64
			for _, c := range f[1] {
				kb = kb*10 + int64(c-'0')
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM")
	return 0
}

// A server killed during a call cannot judge what the call planted; the
// next server does, before its first call returns.
func TestEscapeGitServerKilledMidCall(t *testing.T) {
	e := plantEnv(t)
	e.gitRepo()
	time.Sleep(1100 * time.Millisecond) // the user's repository is older than the call
	s := e.serve()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.callAsync(ctx, map[string]any{"command": "sh", "args": []string{"-c", e.expand(
		`git init -q evil && git -C evil config core.fsmonitor "$PWN" && touch planted && sleep 60`)}})
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(e.ws, "planted")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the call did not plant")
		}
		time.Sleep(20 * time.Millisecond)
	}
	stderrPipe, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/2", s.cmd.Process.Pid))
	s.cmd.Process.Kill()
	select {
	case <-s.stderr.done:
	case <-time.After(15 * time.Second):
		t.Fatalf("the killed server's output stayed open: something it started outlived it; holding its stderr (%s):\n%s",
			stderrPipe, holders(stderrPipe))
	}
	if !e.userGitHas("evil") {
		t.Fatal("control: with the server killed, the planted repository is live (the case this test is about)")
	}
	s2 := e.serve()
	res, _ := s2.sh(t, "true")
	if !strings.Contains(text(res), "moved evil/.git aside") || !strings.Contains(text(res), "did not finish") {
		t.Errorf("the next server's first call: %s", text(res))
	}
	if e.userGit("evil") {
		t.Error("the user's git ran what the killed server's call planted")
	}
}

// holders describes every other process with a descriptor on link (a
// /proc/PID/fd link's text, such as "pipe:[123]"), for a failure message;
// this one holds the read end of the server's stderr.
func holders(link string) string {
	var b strings.Builder
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	self := fmt.Sprintf("/proc/%d", os.Getpid())
	for _, fd := range fds {
		dir := filepath.Dir(filepath.Dir(fd))
		if l, err := os.Readlink(fd); err != nil || l != link || dir == self {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join(dir, "cmdline"))
		status, _ := os.ReadFile(filepath.Join(dir, "status"))
		var keep []string
		for _, line := range strings.Split(string(status), "\n") {
			for _, k := range []string{"State:", "PPid:", "NSpid:", "Threads:", "SigBlk:", "SigCgt:"} {
				if strings.HasPrefix(line, k) {
					keep = append(keep, strings.Join(strings.Fields(line), " "))
				}
			}
		}
		fmt.Fprintf(&b, "  %s %q %s\n", fd, strings.ReplaceAll(string(cmdline), "\x00", " "), strings.Join(keep, "; "))
	}
	if b.Len() == 0 {
		return "  (no process holds it now)"
	}
	return b.String()
}

// userGitHas reports whether the planted code would run in dir now.
func (e *env) userGitHas(dir string) bool {
	e.t.Helper()
	return e.userGit(dir)
}

// Calls that overlap share the stand-ins and judge each other's work: when
// both are over, nothing planted runs and no stand-in is left.
func TestEscapeGitConcurrentCalls(t *testing.T) {
	e := plantEnv(t)
	e.gitRepo()
	os.RemoveAll(filepath.Join(e.ws, ".git", "hooks"))
	s := e.serve("--max-concurrent", "4")
	ctx := context.Background()
	a := s.callAsync(ctx, map[string]any{"command": "sh", "args": []string{"-c", e.expand(
		`sleep 0.3; git init -q a && git -C a config core.fsmonitor "$PWN"; sleep 0.5`)}})
	b := s.callAsync(ctx, map[string]any{"command": "sh", "args": []string{"-c", e.expand(
		`git init -q b; sleep 0.6; git -C b config core.pager "$PWN"; mkdir -p .git/hooks 2>/dev/null; echo x > .git/hooks/pre-commit`)}})
	c := s.callAsync(ctx, map[string]any{"command": "sh", "args": []string{"-c", `sleep 0.2; git init -q plain`}})
	var texts []string
	for _, ch := range []<-chan asyncResult{a, b, c} {
		r := <-ch
		if r.err != nil {
			t.Fatal(r.err)
		}
		texts = append(texts, text(r.res))
	}
	if e.userGit("a", "b", "plain") {
		t.Errorf("planted code ran; results: %q", texts)
	}
	for _, p := range []string{".git/hooks", ".git/commondir", "plain/.git/commondir"} {
		if _, err := os.Lstat(filepath.Join(e.ws, p)); err == nil {
			t.Errorf("%s is left after the calls", p)
		}
	}
	if _, err := os.Stat(filepath.Join(e.ws, "plain", ".git", "HEAD")); err != nil {
		t.Errorf("a plain repository made in an overlapping call was moved: %v; results: %q", err, texts)
	}
}
