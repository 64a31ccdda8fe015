package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A git directory a call places in a work tree other than below a .git
// (from the eleventh git red-team round): git refuses to write a path
// with a .git component, and only that, so a branch holding
// ".meta/hooks/post-checkout" writes a hook into the repository's own
// git directory when the user checks the branch out, and git runs it at
// once. At the end of the call the hooks are samples and the index holds
// valid names: what is planted is the layout. Each is moved aside, one-shot
// and over MCP; the control plants the same on the host and sees the
// user's checkout and status run it.
func TestEscapeGitdirInWorkTree(t *testing.T) {
	const commit = `git -c user.name=a -c user.email=a@example.com commit -q`
	// hook writes the planted hook's blob and prints its name.
	const hook = `b=$(printf '#!/bin/sh\n%s\n' "$PWN" | git hash-object -w --stdin)`
	for _, tt := range []struct {
		name, attack, moved string
		user                bool // the user's repository holds the attack
	}{
		{"its own work tree, through a gitfile", `set -e
git init -q --separate-git-dir=.meta -b main .
printf 'gitdir: .meta\n' > .git
` + commit + ` --allow-empty -m init
git checkout -q -b feature
` + hook + `
for h in post-checkout post-merge pre-commit; do git update-index --add --cacheinfo 100755,$b,.meta/hooks/$h; done
` + commit + ` -m feature
git checkout -q main`, ".git", false},
		{"the user's work tree, from a nested repository", `set -e
git checkout -q -b feature
mkdir vendor
git init -q --separate-git-dir="$PWD/vendor-meta" vendor
printf 'gitdir: ../vendor-meta\n' > vendor/.git
rm vendor-meta/config
git -C vendor -c user.name=a -c user.email=a@example.com commit -q --allow-empty -m v
git add vendor
b=$(printf '[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "%s"\n' "$PWN" | git hash-object -w --stdin)
git update-index --add --cacheinfo 100644,$b,vendor-meta/config
` + commit + ` -m vendor
git checkout -q -`, "vendor/.git", true},
		{"a common dir in the work tree", `set -e
git init -q -b main .
cp -a .git .common
printf '../.common\n' > .git/commondir
` + commit + ` --allow-empty -m init
git checkout -q -b feature
` + hook + `
git update-index --add --cacheinfo 100755,$b,.common/hooks/post-checkout
` + commit + ` -m feature
git checkout -q --ignore-other-worktrees main`, ".git", false},
	} {
		setup := func(e *env) {
			if tt.user {
				e.gitRepo()
			}
		}
		// ran is the user's review of the agent's branch.
		ran := func(e *env) bool {
			t.Helper()
			os.Remove(e.pwned())
			e.gitTry("checkout", "-q", "feature")
			e.gitTry("status")
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
					t.Fatal("planted on the host, the user's checkout ran nothing: the attack tests nothing")
				}
			})
			t.Run("one-shot", func(t *testing.T) {
				e := plantEnv(t)
				setup(e)
				_, stderr, _ := e.sh(e.expand(tt.attack))
				if ran(e) {
					t.Errorf("the user's checkout ran what the call planted\nstderr: %s", stderr)
				}
				if !strings.Contains(stderr, "moved "+tt.moved+" aside") || !strings.Contains(stderr, "not below a .git directory") {
					t.Errorf("no note of %s moved aside for its git directory's place:\n%s", tt.moved, stderr)
				}
			})
			t.Run("server", func(t *testing.T) {
				e := plantEnv(t)
				setup(e)
				s := e.serve()
				res, _ := s.sh(t, e.expand(tt.attack))
				if ran(e) {
					t.Errorf("the user's checkout ran what the call planted\n%s", text(res))
				}
				if !strings.Contains(text(res), "moved "+tt.moved+" aside") {
					t.Errorf("no note of %s moved aside:\n%s", tt.moved, text(res))
				}
			})
		})
	}
}

// The layouts git makes itself keep working: a submodule's git directory
// below .git/modules, a linked worktree's below .git/worktrees, and, in a
// workspace that is no repository, a separate git directory beside its
// work tree.
func TestGitdirLayoutsKept(t *testing.T) {
	const c = `git -c user.name=a -c user.email=a@example.com -c protocol.file.allow=always`
	for _, tt := range []struct {
		name, script string
		repo         bool
		kept         []string
	}{
		{"submodule and worktree", `set -e
git init -q lib && ` + c + ` -C lib commit -q --allow-empty -m lib
` + c + ` submodule -q add ./lib sub
` + c + ` commit -q -m "the submodule"
git worktree add -q wt
git -C sub status --short && git -C wt status --short && git status --short
echo layouts-ok`, true, []string{".git/modules/sub", ".git/worktrees/wt", "sub/.git", "wt/.git"}},
		{"separate git directory", `set -e
git init -q --separate-git-dir="$PWD/meta" tree
` + c + ` -C tree commit -q --allow-empty -m sep
git -C tree status --short
echo layouts-ok`, false, []string{"tree/.git", "meta/HEAD"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := plantEnv(t)
			if tt.repo {
				e.gitRepo()
			}
			out, stderr, code := e.sh(tt.script)
			if code != 0 || !strings.Contains(out, "layouts-ok") {
				t.Fatalf("the layouts git makes failed: status %d\n%s\n%s", code, out, stderr)
			}
			if strings.Contains(stderr, "aside") {
				t.Errorf("a layout git makes was moved aside:\n%s", stderr)
			}
			for _, p := range tt.kept {
				if _, err := os.Lstat(filepath.Join(e.ws, p)); err != nil {
					t.Errorf("%s: %v", p, err)
				}
			}
		})
	}
}

// A work tree a call's repository names (core.worktree) that is the
// user's git directory: the user's checkout in that repository writes
// hooks/post-commit into the user's own hooks (from the eleventh git
// red-team round). Moved aside; the control sees the user's next commit
// run it.
func TestEscapeWorkTreeInGitdir(t *testing.T) {
	const attack = `set -e
export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@example.com GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@example.com
git init -q lib
git -C lib config core.worktree ../../.git
git -C lib commit -q --allow-empty -m init
b=$(printf '#!/bin/sh\n%s\n' "$PWN" | git -C lib hash-object -w --stdin)
export GIT_INDEX_FILE=$HOME/i
git -C lib read-tree HEAD
git -C lib update-index --add --cacheinfo 100755,$b,hooks/post-commit
git -C lib branch v2 $(git -C lib commit-tree -p HEAD -m v2 $(git -C lib write-tree))`
	ran := func(e *env) bool {
		t.Helper()
		os.Remove(e.pwned())
		e.gitTry("-C", filepath.Join(e.ws, "lib"), "checkout", "-q", "v2")
		e.gitTry("-c", "user.name=U", "-c", "user.email=u@example.com", "commit", "-q", "--allow-empty", "-m", "user")
		_, err := os.Lstat(e.pwned())
		return err == nil
	}
	t.Run("control", func(t *testing.T) {
		e := plantEnv(t)
		e.gitRepo()
		e.hostSh(e.expand(attack))
		if !ran(e) {
			t.Fatal("planted on the host, the user's checkout and commit ran nothing: the attack tests nothing")
		}
	})
	t.Run("one-shot", func(t *testing.T) {
		e := plantEnv(t)
		e.gitRepo()
		_, stderr, _ := e.sh(e.expand(attack))
		if ran(e) {
			t.Errorf("the user's commit ran what the call planted\nstderr: %s", stderr)
		}
		if !strings.Contains(stderr, "moved lib/.git aside") {
			t.Errorf("no note of lib/.git moved aside:\n%s", stderr)
		}
	})
	t.Run("server", func(t *testing.T) {
		e := plantEnv(t)
		e.gitRepo()
		s := e.serve()
		res, _ := s.sh(t, e.expand(attack))
		if ran(e) {
			t.Errorf("the user's commit ran what the call planted\n%s", text(res))
		}
		if !strings.Contains(text(res), "moved lib/.git aside") {
			t.Errorf("no note of lib/.git moved aside:\n%s", text(res))
		}
	})
}
