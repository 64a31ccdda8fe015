package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A command leaves git something to go on with later, outside the
// sandbox: a stopped interactive rebase whose to-do list runs a command
// (red team round 5, Q1), or a legacy remotes file that sends the user's
// git push into another repository of theirs (R1). The user then runs git
// rebase --continue or git push on the host. A control makes the same
// planting on the host and sees it get through.

type opStateAttack struct {
	name   string
	setup  func(e *env) // the user's, on the host, before the server starts
	steps  []string     // one call each
	user   [][]string   // what the user runs afterwards, in the workspace
	harmed func(e *env) bool
	// said is what a note must say it did; "aside" if "".
	said string
}

// twoCommits is the user's repository with a commit to rebase onto.
func twoCommits(e *env) {
	e.gitRepo()
	e.git("commit", "-q", "--allow-empty", "-m", "second")
}

// otherRepo is the user's repository, and another of theirs outside the
// workspace, a bare one the user pushes to.
func otherRepo(e *env) {
	e.gitRepo()
	e.git("init", "-q", "--bare", filepath.Join(e.home, "other.git"))
}

var opStateAttacks = []opStateAttack{
	{name: "an interactive rebase whose to-do list runs a command", setup: twoCommits,
		steps: []string{`d=.git/rebase-merge && mkdir $d && git rev-parse HEAD > $d/orig-head && git rev-parse HEAD~1 > $d/onto &&
git symbolic-ref HEAD > $d/head-name && : > $d/interactive && : > $d/done && echo 1 > $d/end && echo 0 > $d/msgnum &&
echo "exec $PWN" > $d/git-rebase-todo`},
		user: [][]string{{"status"}, {"-c", "core.editor=true", "rebase", "--continue"}},
		harmed: func(e *env) bool {
			_, err := os.Lstat(e.pwned())
			return err == nil
		}},
	{name: "a legacy remotes file that pushes into another repository", setup: otherRepo,
		steps: []string{`mkdir -p .git/remotes && printf 'URL: %s\nPush: HEAD:refs/heads/planted\n' "$OTHER.git" > .git/remotes/origin`},
		user:  [][]string{{"push", "-q"}},
		harmed: func(e *env) bool {
			_, err := e.gitTry("--git-dir", filepath.Join(e.home, "other.git"), "rev-parse", "-q", "--verify", "refs/heads/planted")
			return err == nil
		}},
}

// threeCommitsAndVictim is the user's repository with three commits, the
// last of which, picked again onto the first, is merged by the strategy
// named; and a file of theirs outside the workspace, $OTHER.
func threeCommitsAndVictim(e *env) {
	e.gitRepo()
	e.hostSh(`echo b >> README && git commit -qam b && echo c > g && git add g && git commit -qm c`)
	e.write(filepath.Join(e.home, "other"), "the user's\n", 0o644)
}

func victimChanged(e *env) bool {
	b, _ := os.ReadFile(filepath.Join(e.home, "other"))
	return string(b) != "the user's\n"
}

// Red team round 6: options for the merge strategy, which git's scripted
// strategies hand to git read-tree (--index-output=PATH writes an index at
// PATH), and a rerere record naming a file outside.
var opStateAttacks6 = []opStateAttack{
	{name: "a rebase's strategy options that write outside", setup: threeCommitsAndVictim,
		steps: []string{`c=$(git rev-parse HEAD) && git reset -q --hard HEAD~2 && d=.git/rebase-merge && mkdir $d && git rev-parse HEAD > $d/orig-head && cp $d/orig-head $d/onto &&
git symbolic-ref HEAD > $d/head-name && : > $d/interactive && : > $d/done && echo 1 > $d/end && echo 0 > $d/msgnum && echo "pick $c" > $d/git-rebase-todo &&
echo resolve > $d/strategy && printf ' --index-output=%s\n' "$OTHER" > $d/strategy_opts`},
		user:   [][]string{{"-c", "core.editor=true", "rebase", "--continue"}},
		harmed: victimChanged},
	{name: "a cherry-pick's strategy option that writes outside", setup: threeCommitsAndVictim,
		steps: []string{`c=$(git rev-parse HEAD) && git reset -q --hard HEAD~2 && mkdir .git/sequencer && git rev-parse HEAD > .git/sequencer/head &&
cp .git/sequencer/head .git/sequencer/abort-safety && printf 'pick %s c\npick %s c\n' $c $c > .git/sequencer/todo &&
git config -f .git/sequencer/opts options.strategy resolve && git config -f .git/sequencer/opts options.strategy-option "index-output=$OTHER"`},
		user:   [][]string{{"-c", "core.editor=true", "cherry-pick", "--continue"}},
		harmed: victimChanged},
	// Not the red team's: a repository made in the call whose remote is
	// a local path to another repository of the user's, outside.
	{name: "a new repository's remote URL into another repository", setup: otherRepo,
		steps: []string{`git init -q sub && git -C sub commit -q --allow-empty -m s && git -C sub remote add origin "file://$OTHER.git"`},
		user:  [][]string{{"-C", "sub", "push", "-q", "origin", "HEAD:refs/heads/planted"}},
		harmed: func(e *env) bool {
			_, err := e.gitTry("--git-dir", filepath.Join(e.home, "other.git"), "rev-parse", "-q", "--verify", "refs/heads/planted")
			return err == nil
		}},
	{name: "a rerere record that copies a file outside in",
		setup: func(e *env) {
			e.gitRepo()
			e.write(filepath.Join(e.home, "other"), "TOPSECRET\n", 0o600)
		},
		steps: []string{`id=$(printf '%040d' 7) && mkdir -p .git/rr-cache/$id && printf '%s\t%s\0' $id "$OTHER" > .git/MERGE_RR`},
		user:  [][]string{{"-c", "user.name=U", "-c", "user.email=u@example.com", "commit", "-q", "--allow-empty", "-m", "user"}},
		harmed: func(e *env) bool {
			out, _ := exec.Command("grep", "-rl", "TOPSECRET", e.ws).Output()
			return len(out) > 0
		}},
}

func TestEscapeGitOpState(t *testing.T) {
	for _, tt := range append(opStateAttacks, opStateAttacks6...) {
		t.Run(tt.name, func(t *testing.T) { runOpStateAttack(t, tt) })
	}
}

// runOpStateAttack runs one planting: its control on the host, then
// one-shot and over MCP, each followed by what the user runs.
func runOpStateAttack(t *testing.T, tt opStateAttack) {
	said := tt.said
	if said == "" {
		said = "aside"
	}
	user := func(e *env) bool {
		os.Remove(e.pwned())
		for _, args := range tt.user {
			e.gitTry(args...)
		}
		return tt.harmed(e)
	}
	t.Run("control", func(t *testing.T) {
		e := plantEnv(t)
		tt.setup(e)
		for _, s := range tt.steps {
			e.hostSh(e.expand(s))
		}
		if !user(e) {
			t.Fatal("planted on the host, it did not get through the user's git: the attack tests nothing")
		}
	})
	t.Run("one-shot", func(t *testing.T) {
		e := plantEnv(t)
		tt.setup(e)
		var notes []string
		for _, s := range tt.steps {
			_, stderr, _ := e.sh(e.expand(s))
			notes = append(notes, stderr)
		}
		if user(e) {
			t.Errorf("the user's git went on with what the sandbox planted\nstderr of the calls: %q", notes)
		}
		if !strings.Contains(strings.Join(notes, "\n"), said) {
			t.Errorf("no call said what it did (%q): %q", said, notes)
		}
	})
	t.Run("mcp", func(t *testing.T) {
		e := plantEnv(t)
		tt.setup(e)
		s := e.serve()
		var texts []string
		for _, step := range tt.steps {
			res, _ := s.sh(t, e.expand(step))
			texts = append(texts, text(res))
		}
		if user(e) {
			t.Errorf("the user's git went on with what the sandbox planted\nresults: %q", texts)
		}
		if !strings.Contains(strings.Join(texts, "\n"), said) {
			t.Errorf("no result said what it did (%q): %q", said, texts)
		}
		if _, out := s.sh(t, "echo ok"); out.Stdout != "ok\n" {
			t.Errorf("the next call: %+v", out)
		}
	})
}

// An agent's rebase stops at a conflict in one call and goes on in the
// next: the state it leaves between them is git's own, and stays.
func TestGitOpStateHonestRebase(t *testing.T) {
	setup := func(e *env) {
		e.write(filepath.Join(e.home, ".gitconfig"), identity, 0o644)
		e.gitRepo()
		e.git("branch", "-M", "main")
		e.hostSh(`git checkout -qb topic && echo topic > README && git commit -qam topic && git checkout -q main &&
echo main > README && git commit -qam main && git checkout -q topic`)
	}
	const first = `git rebase main; test -d .git/rebase-merge && echo stopped`
	const second = `echo resolved > README && git add README && GIT_EDITOR=true git rebase --continue >/dev/null && git log --format=%s -3`
	const want = "topic\nmain\ninitial\n"
	check := func(t *testing.T, e *env, firstOut, secondOut string, notes []string) {
		t.Helper()
		if !strings.Contains(firstOut, "stopped") {
			t.Fatalf("the first call's rebase did not stop at its conflict: %q", firstOut)
		}
		if secondOut != want {
			t.Errorf("the second call: %q, want %q; notes: %q", secondOut, want, notes)
		}
		for _, n := range notes {
			if strings.Contains(n, "aside") || strings.Contains(n, "note:") {
				t.Errorf("honest use got a note: %s", n)
			}
		}
		if st := e.git("status", "--porcelain"); st != "" || strings.Contains(e.git("status"), "rebase") {
			t.Errorf("the host's git status after the calls: %q", e.git("status"))
		}
	}
	t.Run("one-shot", func(t *testing.T) {
		e := newEnv(t)
		setup(e)
		out1, err1, _ := e.sh(first)
		out2, err2, _ := e.sh(second)
		check(t, e, out1, out2, []string{err1, err2})
	})
	t.Run("mcp", func(t *testing.T) {
		e := newEnv(t)
		setup(e)
		s := e.serve()
		res1, out1 := s.sh(t, first)
		res2, out2 := s.sh(t, second)
		check(t, e, out1.Stdout, out2.Stdout, []string{text(res1), text(res2)})
	})
}

// An agent clones a repository the user granted read-only: its remote
// leads there, outside the writable roots, and stays.
func TestGitCloneOfReadOnlyGrantStays(t *testing.T) {
	e := newEnv(t)
	lib := filepath.Join(e.home, "lib")
	e.hostSh(`git init -q "` + lib + `" && git -C "` + lib + `" -c user.name=U -c user.email=u@example.com commit -q --allow-empty -m lib`)
	e.own(lib)
	const clone = `git clone -q "$LIB" lib && git -C lib log --format=%s`
	script := strings.ReplaceAll(clone, "$LIB", lib)
	t.Run("one-shot", func(t *testing.T) {
		out, stderr, code := e.run([]string{"--read-only", lib}, "sh", "-c", script)
		if code != 0 || out != "lib\n" || strings.Contains(stderr, "aside") {
			t.Errorf("code %d, stdout %q, stderr %q", code, out, stderr)
		}
		os.RemoveAll(filepath.Join(e.ws, "lib"))
	})
	t.Run("mcp", func(t *testing.T) {
		s := e.serve("--read-only", lib)
		res, out := s.sh(t, script)
		if out.Stdout != "lib\n" || strings.Contains(text(res), "aside") {
			t.Errorf("result %q", text(res))
		}
	})
}
