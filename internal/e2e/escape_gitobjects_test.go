package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// huskyRepo makes the user's repository: core.hooksPath .husky (husky's
// way) with a tracked, harmless pre-commit hook.
func (e *env) huskyRepo() {
	e.t.Helper()
	e.git("init", "-q")
	e.write(".husky/pre-commit", "#!/bin/sh\nexit 0\n", 0o755)
	e.git("config", "core.hooksPath", ".husky")
	e.git("add", "-A")
	e.git("commit", "-q", "-m", "initial")
}

// substituteHook is a call's script: it writes a blob of the planted hook
// (git writes it as zlib("blob N\0content")), then copies that file over
// the loose object of HEAD:.husky/pre-commit, which the command owns.
const substituteHook = `oid=$(git rev-parse HEAD:.husky/pre-commit) &&
p=$(printf '#!/bin/sh\n%s\n' "$PWN" | git hash-object -w --stdin) &&
f=.git/objects/$(echo $oid | cut -c1-2)/$(echo $oid | cut -c3-) &&
chmod u+w $f && cat .git/objects/$(echo $p | cut -c1-2)/$(echo $p | cut -c3-) > $f`

// userChecksOut is what the user's git does later, on the host: the hook
// checked out again, a worktree added, a commit in each. It reports
// whether the planted hook ran.
func (e *env) userChecksOut() bool {
	e.t.Helper()
	os.Remove(e.pwned())
	os.Remove(filepath.Join(e.ws, ".husky", "pre-commit"))
	e.gitTry("checkout", "--", ".husky")
	e.gitTry("commit", "-q", "--allow-empty", "-m", "user")
	wt := filepath.Join(e.home, "wt")
	e.gitTry("worktree", "add", "-q", wt)
	e.gitTry("-C", wt, "commit", "-q", "--allow-empty", "-m", "user")
	e.gitTry("worktree", "remove", "--force", wt)
	_, err := os.Lstat(e.pwned())
	return err == nil
}

// Git does not check an object's hash when it reads it: a command that
// rewrites a loose object of the user's repository gives the user's
// checkout other content under the same id, and a hook checked out that
// way runs at the next commit. On the host it does; through the sandbox,
// one-shot and over MCP, the call's end moves the object aside, so the
// user's git finds it missing rather than planted, and runs nothing.
func TestEscapeGitObjectSubstituted(t *testing.T) {
	t.Run("control", func(t *testing.T) {
		e := plantEnv(t)
		e.huskyRepo()
		e.hostSh(e.expand(substituteHook))
		if !e.userChecksOut() {
			t.Fatal("planted on the host, the hook did not run: the attack tests nothing")
		}
	})
	const note = "is a loose object that does not hold what its name says"
	t.Run("one-shot", func(t *testing.T) {
		e := plantEnv(t)
		e.huskyRepo()
		_, stderr, code := e.sh(e.expand(substituteHook))
		if code != 0 {
			t.Fatalf("the substitution failed inside (exit %d): %s", code, stderr)
		}
		if !strings.Contains(stderr, note) || !strings.Contains(stderr, "git now finds that object missing") {
			t.Errorf("no note of the object moved aside: %q", stderr)
		}
		if e.userChecksOut() {
			t.Errorf("the user's git ran the planted hook\nstderr: %q", stderr)
		}
	})
	// Over MCP: in the first call; and, since a server watches the loose
	// objects once a call has ended and then stats only those an event
	// touched, after idle calls, and through a hard link an earlier call
	// made in the git directory (the object's directory sees nothing of it).
	for _, tt := range []struct{ name, before, plant string }{
		{"mcp", "", substituteHook},
		{"mcp, after calls that watch the objects", "true", substituteHook},
		{"mcp, through a hard link an earlier call made", `oid=$(git rev-parse HEAD:.husky/pre-commit) && ln .git/objects/$(echo $oid | cut -c1-2)/$(echo $oid | cut -c3-) .git/objects/pack/tmp_pack_l`,
			`p=$(printf '#!/bin/sh\n%s\n' "$PWN" | git hash-object -w --stdin) && chmod u+w .git/objects/pack/tmp_pack_l && cat .git/objects/$(echo $p | cut -c1-2)/$(echo $p | cut -c3-) > .git/objects/pack/tmp_pack_l && rm .git/objects/pack/tmp_pack_l`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := plantEnv(t)
			e.huskyRepo()
			s := e.serve()
			for i := 0; i < 2 && tt.before != ""; i++ {
				if res, out := s.sh(t, e.expand(tt.before)); out.ExitCode != 0 || strings.Contains(text(res), "git:") {
					t.Fatalf("%s: %s", tt.before, text(res))
				}
				tt.before = "true"
			}
			res, out := s.sh(t, e.expand(tt.plant))
			if out.ExitCode != 0 {
				t.Fatalf("the substitution failed inside: %s", text(res))
			}
			if !strings.Contains(text(res), note) {
				t.Errorf("no note of the object moved aside: %s", text(res))
			}
			if e.userChecksOut() {
				t.Errorf("the user's git ran the planted hook\nresult: %s", text(res))
			}
		})
	}
}

// Honest calls write objects the way git does, in the user's repository:
// commits, a gc (a new pack, a commit-graph, loose objects pruned), a
// fetch from a repository inside the workspace. None is noted, and the
// repository stays whole for the user's git.
func TestGitObjectsHonest(t *testing.T) {
	e := plantEnv(t)
	e.huskyRepo()
	s := e.serve()
	for _, script := range []string{
		"echo a > a && git add a && git commit -qm a",
		"echo b > b && git add b && git commit -qm b && git gc -q",
		"git clone -q --no-local . other && echo z > other/z && git -C other add z && git -C other commit -qm z && git fetch -q other HEAD:other",
		"echo c > c && git add c && git commit -qm c",
	} {
		res, out := s.sh(t, script)
		if out.ExitCode != 0 || strings.Contains(text(res), "moved") || strings.Contains(text(res), "git:") {
			t.Errorf("%s: %s", script, text(res))
		}
	}
	if out, err := e.gitTry("fsck", "--no-progress"); err != nil {
		t.Errorf("git fsck: %v\n%s", err, out)
	}
	if e.userChecksOut() {
		t.Error("the marker appeared with nothing planted")
	}
}
