package gitguard

import (
	"os"
	"path/filepath"
	"testing"
)

// TestInWorkTree: a git directory below a .git component (in any case) is
// out of every work tree's reach; anywhere else in a work tree, its own or
// one above it, it is not. A bare repository has only its own.
func TestInWorkTree(t *testing.T) {
	top := t.TempDir()
	top, _ = filepath.EvalSymlinks(top)
	for _, d := range []string{"repo/.git/modules/sub", "repo/.GIT/x", "repo/.git", "repo/vendor-meta", "repo/a/b/meta", "plain/meta", "plain/x.git"} {
		os.MkdirAll(filepath.Join(top, d), 0o755)
	}
	for _, tt := range []struct {
		dir  string
		own  []string
		bare bool
		want string // the work tree, or "" for none
	}{
		{"repo/.git", []string{"repo"}, false, ""},
		{"repo/.git/modules/sub", []string{"repo/sub"}, false, ""},
		{"repo/.GIT/x", nil, false, ""},
		{"repo/.meta", []string{"repo"}, false, "repo"},
		{"repo", []string{"repo"}, false, "repo"},
		{"repo/vendor-meta", []string{"repo/vendor"}, false, "repo"},
		{"repo/a/b/meta", []string{"repo/a/b/tree"}, false, "repo"},
		{"plain/meta", []string{"plain/tree"}, false, ""},
		{"plain/x.git", nil, true, ""},
		{"repo/vendor-meta", nil, true, ""},
		{"plain/x.git", []string{"plain"}, true, "plain"},
	} {
		var own []string
		for _, o := range tt.own {
			own = append(own, filepath.Join(top, o))
		}
		wt, rel, ok := inWorkTree(filepath.Join(top, tt.dir), own, tt.bare)
		want := ""
		if tt.want != "" {
			want = filepath.Join(top, tt.want)
		}
		if ok != (want != "") || ok && wt != want {
			t.Errorf("inWorkTree(%s, %v, bare %v) = %q, %q, %v; want the work tree %q", tt.dir, tt.own, tt.bare, wt, rel, ok, want)
		}
	}
}

// treeVariants are ways a repository A names the work tree t: its own
// (a .git directory, a .git file), a core.worktree (of a bare
// repository, of a config, of a config.worktree) and a linked worktree.
// mk makes A with a commit; ga is git in A, as the user runs it.
var treeVariants = []struct{ name, mk, ga string }{
	{".git directory", `git init -q t && git -C t commit -q --allow-empty -m a`, `git -C t`},
	{".git file", `mkdir -p store && git init -q --separate-git-dir "$PWD/store/a" t && git -C t commit -q --allow-empty -m a`, `git -C t`},
	{"bare repository's core.worktree", `mkdir -p t && git init -q --bare a.git && git -C a.git config core.bare false && git -C a.git config core.worktree "$PWD/t" && git --git-dir=a.git commit -q --allow-empty -m a`, `git --git-dir=a.git`},
	{"core.worktree in config", `mkdir -p t && git init -q x && git -C x config core.worktree "$PWD/t" && git -C x commit -q --allow-empty -m a`, `git -C x`},
	{"core.worktree in config.worktree", `mkdir -p t && git init -q x && git -C x config extensions.worktreeConfig true && git -C x config --worktree core.worktree "$PWD/t" && git -C x commit -q --allow-empty -m a`, `git -C x`},
	// Git worktree add makes only a new directory: t's .git file and the
	// gitdir naming it are moved there.
	{"linked worktree", `mkdir -p t && git init -q a && git -C a commit -q --allow-empty -m a && git -C a worktree add -q ../t2 &&
mv t2/.git t/.git && echo "$PWD/t/.git" > a/.git/worktrees/t2/gitdir && rm -rf t2`, `git -C t`},
}

// makeB makes the repository B at proj, its git directory t/meta: in the
// work tree t, not below a .git.
const makeB = `mkdir -p t && git init -q --separate-git-dir "$PWD/t/meta" proj && git -C proj commit -q --allow-empty -m b`

// plantIn commits into A (git as $1), as a command can without touching
// A's work tree or index, meta/config setting core.fsmonitor: the user's
// own git reset --hard in A writes it into B's git directory.
const plantIn = `plant() {
	h=$(printf '[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "%s"\n' "$PWN" | $1 hash-object -w --stdin) &&
	i="$PWD/../plant-index" && GIT_INDEX_FILE="$i" $1 read-tree HEAD &&
	GIT_INDEX_FILE="$i" $1 update-index --add --cacheinfo "100644,$h,meta/config" &&
	c=$($1 commit-tree $(GIT_INDEX_FILE="$i" $1 write-tree) -p HEAD -m m) && $1 update-ref HEAD $c && rm -f "$i"
}
`

// A git directory in another repository's work tree is one that
// repository's git writes into: a call that makes either side has the
// user's git reset --hard there write a config with core.fsmonitor (a
// commit of the call's) into the git directory, after the guard judged it
// clean. The side the call made goes; two the user made stay, through a
// work tree the call made anew at the same path too.
func TestGitdirInAnotherWorkTree(t *testing.T) {
	for _, v := range treeVariants {
		userReset := func(f *fixture) bool {
			f.sh(v.ga + ` reset -q --hard || true`) // fails once A is moved aside
			return f.userGit("proj")
		}
		t.Run(v.name+": the call makes B in A's work tree", func(t *testing.T) {
			checkHarm(t, func(guarded bool) (bool, []string) {
				f := newFixture(t)
				f.sh(v.mk)
				attack := plantIn + makeB + ` && plant "` + v.ga + `"`
				if !guarded {
					f.sh(attack)
					return userReset(f), nil
				}
				f.start()
				notes := f.call(attack)
				return userReset(f), notes
			}, "moved proj/.git aside")
		})
		t.Run(v.name+": the call makes A around B", func(t *testing.T) {
			checkHarm(t, func(guarded bool) (bool, []string) {
				f := newFixture(t)
				f.sh(makeB)
				attack := plantIn + v.mk + ` && plant "` + v.ga + `"`
				if !guarded {
					f.sh(attack)
					return userReset(f), nil
				}
				f.start()
				notes := f.call(attack)
				return userReset(f), notes
			}, "holds, not below a .git directory, the git directory t/meta of the repository proj/.git")
		})
		t.Run(v.name+": the user's both", func(t *testing.T) {
			f := newFixture(t)
			f.sh(v.mk + " && " + makeB)
			f.start()
			for _, script := range []string{
				`echo x > t/f && git -C proj commit -q --allow-empty -m c`,
				// The work tree made anew at its path, B's git directory
				// moved into it: still the user's.
				`mv t t.old && mkdir t && mv t.old/meta t.old/.git t/ 2>/dev/null; mv t.old/meta t/ 2>/dev/null; rm -rf t.old`,
			} {
				if notes := f.call(script); len(notes) != 0 {
					t.Errorf("%s: notes %q, want none", script, notes)
				}
			}
			f.sh(v.ga + ` status --porcelain && git -C proj status --porcelain`)
		})
	}
}

// A call cut short (its server killed) that made either side is judged
// by the next server's first call: what was made since it began goes.
func TestKilledCallGitdirInAnotherWorkTree(t *testing.T) {
	v := treeVariants[3] // core.worktree in config: no .git above B's git directory
	for _, tt := range []struct{ name, setup, attack, want string }{
		{"the call makes B in A's work tree", v.mk, plantIn + makeB + ` && plant "` + v.ga + `"`, "moved proj/.git aside"},
		{"the call makes A around B", makeB, plantIn + v.mk + ` && plant "` + v.ga + `"`, "moved x/.git aside"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			checkHarm(t, func(guarded bool) (bool, []string) {
				f := newFixture(t)
				f.sh(tt.setup)
				notes := killedCall(t, f, guarded, func(f *fixture) { f.sh(tt.attack) })
				f.sh(v.ga + ` reset -q --hard || true`)
				return f.userGit("proj"), notes
			}, tt.want)
		})
	}
	t.Run("the user's both", func(t *testing.T) {
		f := newFixture(t)
		f.sh(v.mk + " && " + makeB)
		if notes := killedCall(t, f, true, func(f *fixture) { f.sh(`echo x > t/f`) }); len(notes) != 0 {
			t.Errorf("notes %q, want none", notes)
		}
	})
}
