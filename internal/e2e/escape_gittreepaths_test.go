package e2e

import (
	"os"
	"strings"
	"testing"
	"time"
)

// The user's own layout that puts code for git in the work tree: a
// tracked core.hooksPath (husky's .husky, a repository's .githooks). The
// hooks directory is read-only in a call, but a call can still commit, or
// stage, a hook there without touching the work tree: the user's own
// checkout of the agent's branch, git checkout -- ., git reset --hard or
// git stash pop then writes it, and the user's next commit runs it. What
// reaches those paths is put back: a branch, HEAD, a tag, a remote-tracking
// ref, a stash entry, the index. The control plants the same on the host
// and sees the user's git run it.
func TestEscapeGitTreePaths(t *testing.T) {
	// hook writes the planted hook's blob into $b.
	const hook = `set -e
b=$(printf '#!/bin/sh\n%s\n' "$PWN" | git hash-object -w --stdin)
`
	const commit = `git -c user.name=a -c user.email=a@example.com commit -q`
	for _, tt := range []struct {
		name, attack string
		review       []string // what the user runs to see the agent's work
		meta         bool     // the user's git directory is .meta in the work tree, not .husky
	}{
		{"a separate git directory in the work tree, a branch", hook + `git checkout -q -b feature
git update-index --add --cacheinfo 100755,$b,.meta/hooks/post-checkout
` + commit + ` -m feature
git checkout -q -f -`, []string{"checkout -q feature"}, true},
		{"a branch", hook + `git checkout -q -b feature
echo agent > work.txt && git add work.txt
git update-index --cacheinfo 100755,$b,.husky/pre-commit
` + commit + ` -m feature
git checkout -q -f -`, []string{"checkout -q feature"}, false},
		{"the current branch", hook + `git update-index --cacheinfo 100755,$b,.husky/pre-commit
` + commit + ` -m agent`, []string{"reset -q --hard"}, false},
		{"the index only", hook + `git update-index --cacheinfo 100755,$b,.husky/pre-commit`, []string{"checkout -- ."}, false},
		{"a tag", hook + `git update-index --cacheinfo 100755,$b,.husky/pre-commit
t=$(git write-tree); c=$(git commit-tree -p HEAD -m v2 $t); git tag v2 $c; git read-tree HEAD`, []string{"checkout -q v2"}, false},
		{"a remote-tracking ref", hook + `git update-index --cacheinfo 100755,$b,.husky/pre-commit
t=$(git write-tree); c=$(git commit-tree -p HEAD -m up $t); git update-ref refs/remotes/origin/main $c; git read-tree HEAD`, []string{"merge -q --ff-only origin/main"}, false},
		{"ORIG_HEAD", hook + `git update-index --cacheinfo 100755,$b,.husky/pre-commit
t=$(git write-tree); c=$(git commit-tree -p HEAD -m undo $t); git read-tree HEAD
git update-ref ORIG_HEAD $c`, []string{"reset -q --hard ORIG_HEAD"}, false},
		{"a hundred branches", hook + `git update-index --cacheinfo 100755,$b,.husky/pre-commit
t=$(git write-tree); c=$(git commit-tree -p HEAD -m many $t); git read-tree HEAD
for i in $(seq 100); do echo "create refs/heads/b$i $c"; done | git update-ref --stdin`, []string{"checkout -q b77"}, false},
		{"a stash entry", hook + `git update-index --cacheinfo 100755,$b,.husky/pre-commit
t=$(git write-tree); i=$(git commit-tree -p HEAD -m index $t)
w=$(git commit-tree -p HEAD -p $i -m "WIP on main" $t)
git stash store -m "WIP on main" $w; git read-tree HEAD`, []string{"stash pop -q"}, false},
	} {
		setup := func(e *env) {
			e.write("work.txt", "user\n", 0o644)
			if tt.meta {
				e.git("init", "-q", "-b", "main", "--separate-git-dir=.meta")
				e.write(".meta/info/exclude", ".meta\n", 0o644)
			} else {
				e.write(".husky/pre-commit", "#!/bin/sh\nexit 0\n", 0o755)
				e.git("init", "-q", "-b", "main")
				e.git("config", "core.hooksPath", ".husky")
			}
			e.git("add", "-A")
			e.git("-c", "user.name=Host", "-c", "user.email=host@example.com", "commit", "-q", "-m", "initial")
		}
		ran := func(e *env) bool {
			t.Helper()
			os.Remove(e.pwned())
			for _, r := range tt.review {
				e.gitTry(strings.Fields(r)...)
			}
			e.gitTry("-c", "user.name=U", "-c", "user.email=u@example.com", "commit", "-q", "--allow-empty", "-m", "user")
			_, err := os.Lstat(e.pwned())
			return err == nil
		}
		t.Run(tt.name, func(t *testing.T) {
			t.Run("control", func(t *testing.T) {
				e := plantEnv(t)
				setup(e)
				e.hostSh(e.expand(tt.attack))
				if !ran(e) {
					t.Fatal("planted on the host, the user's git ran nothing: the attack tests nothing")
				}
			})
			t.Run("one-shot", func(t *testing.T) {
				e := plantEnv(t)
				setup(e)
				_, stderr, _ := e.sh(e.expand(tt.attack))
				if ran(e) {
					t.Errorf("the user's git ran what the call planted\nstderr: %s", stderr)
				}
				if !strings.Contains(stderr, ".husky") && !strings.Contains(stderr, ".meta") {
					t.Errorf("no note of what reached .husky or .meta:\n%s", stderr)
				}
			})
			t.Run("server", func(t *testing.T) {
				e := plantEnv(t)
				setup(e)
				s := e.serve()
				res, _ := s.sh(t, e.expand(tt.attack))
				if ran(e) {
					t.Errorf("the user's git ran what the call planted\n%s", text(res))
				}
			})
			// Once the repository's ref files are a second old, an idle
			// call asks git nothing: what git said is kept with the
			// files it read, and taken while they are as they were.
			t.Run("server, after idle calls", func(t *testing.T) {
				e := plantEnv(t)
				setup(e)
				s := e.serve()
				time.Sleep(1100 * time.Millisecond)
				for range 2 {
					if res, _ := s.sh(t, "true"); strings.Contains(text(res), "git:") {
						t.Fatalf("an idle call noted: %s", text(res))
					}
				}
				res, _ := s.sh(t, e.expand(tt.attack))
				if ran(e) {
					t.Errorf("the user's git ran what the call planted\n%s", text(res))
				}
			})
		})
	}
}

// Honest work in a repository with a tracked core.hooksPath keeps all it
// made: branches, commits, a merge, a tag, stash entries, the index, and
// no note; the guard's check runs git only in such repositories.
func TestGitTreePathsHonestUse(t *testing.T) {
	const script = `set -e
export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@example.com GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@example.com
git checkout -q -b feature
echo agent > a.txt && git add a.txt && git commit -q -m a
echo more >> work.txt && git stash -q && git stash list >/dev/null
echo b > b.txt && git add b.txt && git stash -q
git stash pop -q
git checkout -q main && git merge -q --no-edit feature && git tag v1
echo staged > c.txt && git add c.txt
echo honest-ok`
	for _, mode := range []string{"one-shot", "server"} {
		t.Run(mode, func(t *testing.T) {
			e := plantEnv(t)
			e.write("work.txt", "user\n", 0o644)
			e.write(".husky/pre-commit", "#!/bin/sh\nexit 0\n", 0o755)
			e.git("init", "-q", "-b", "main")
			e.git("config", "core.hooksPath", ".husky")
			e.git("add", "-A")
			e.git("-c", "user.name=Host", "-c", "user.email=host@example.com", "commit", "-q", "-m", "initial")
			var out, notes string
			if mode == "one-shot" {
				var code int
				out, notes, code = e.sh(script)
				if code != 0 {
					t.Fatalf("status %d\n%s\n%s", code, out, notes)
				}
			} else {
				res, _ := e.serve().sh(t, script)
				out, notes = text(res), text(res)
			}
			if !strings.Contains(out, "honest-ok") {
				t.Fatalf("the honest work failed:\n%s\n%s", out, notes)
			}
			if strings.Contains(notes, "put back") || strings.Contains(notes, "dropped") || strings.Contains(notes, "quarantine") {
				t.Errorf("honest work was undone:\n%s", notes)
			}
			refs := e.git("show-ref")
			for _, r := range []string{"refs/heads/feature", "refs/tags/v1", "refs/stash"} {
				if !strings.Contains(refs, r) {
					t.Errorf("%s is gone:\n%s", r, refs)
				}
			}
			if strings.Contains(refs, "nanosandbox-quarantine") {
				t.Errorf("something was quarantined:\n%s", refs)
			}
			if got := e.git("diff", "--cached", "--name-only"); got != "b.txt\nc.txt\n" {
				t.Errorf("staged: %q, want b.txt (the stash popped) and c.txt", got)
			}
			if got := e.git("log", "--format=%s", "main"); !strings.Contains(got, "a\ninitial") {
				t.Errorf("main's history: %q", got)
			}
		})
	}
}
