package e2e

import (
	"os"
	"strings"
	"testing"
)

// A git directory in the work tree of another repository, one the guard
// knows by its core.worktree and not by a .git above (our red team's F4):
// that repository's git, the user's, writes into it. The call makes either
// side, commits meta/config with core.fsmonitor into the repository whose
// work tree holds meta (without touching its work tree or index), and
// leaves every config clean; the user's git reset --hard there writes the
// config into the git directory of proj, and git status in proj runs it.
// The side the call made is moved aside; two of the user's stay.
func TestEscapeGitdirInAnotherWorkTree(t *testing.T) {
	// The user's dotfiles-style repository: a bare one whose core.worktree
	// is the workspace (vcsh, yadm), git run with --git-dir.
	const dots = `git init -q --bare .dots.git && git --git-dir=.dots.git config core.bare false &&
git --git-dir=.dots.git config core.worktree "$PWD" && git --git-dir=.dots.git commit -q --allow-empty -m dots`
	// A repository in tools whose core.worktree is the workspace.
	const tools = `git init -q tools && git -C tools config core.worktree "$PWD" && git -C tools commit -q --allow-empty -m tools`
	// proj keeps its git directory in meta, beside it (git init
	// --separate-git-dir, a layout git makes).
	const proj = `git init -q --separate-git-dir "$PWD/meta" proj && git -C proj commit -q --allow-empty -m proj`
	// plant commits meta/config into the repository git $1 works on.
	const plant = `plant() {
	h=$(printf '[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "%s"\n' "$PWN" | $1 hash-object -w --stdin) &&
	i="${TMPDIR:-/tmp}/plant-index" && GIT_INDEX_FILE="$i" $1 read-tree HEAD &&
	GIT_INDEX_FILE="$i" $1 update-index --add --cacheinfo "100644,$h,meta/config" &&
	c=$($1 commit-tree $(GIT_INDEX_FILE="$i" $1 write-tree) -p HEAD -m m) && $1 update-ref HEAD $c && rm -f "$i"
}
`
	for _, tt := range []struct {
		name, user, attack, moved string
		ga                        []string // the user's git in the repository whose work tree holds meta
	}{
		{"the call makes proj, its git directory in the work tree of the user's", dots,
			plant + proj + ` && plant "git --git-dir=.dots.git"`, "proj/.git", []string{"--git-dir=.dots.git"}},
		{"the call makes a repository whose work tree holds the user's git directory", proj,
			plant + tools + ` && plant "git -C tools"`, "tools/.git", []string{"-C", "tools"}},
	} {
		// ran is what the user does next: their git in the repository
		// whose work tree holds meta, then in proj.
		ran := func(e *env) bool {
			t.Helper()
			os.Remove(e.pwned())
			e.gitTry(append(tt.ga, "reset", "-q", "--hard")...)
			e.gitTry("-C", "proj", "status")
			e.gitTry("-C", "proj", "-c", "user.name=U", "-c", "user.email=u@example.com", "commit", "-q", "--allow-empty", "-m", "user")
			_, err := os.Lstat(e.pwned())
			return err == nil
		}
		t.Run(tt.name, func(t *testing.T) {
			t.Run("control", func(t *testing.T) {
				e := plantEnv(t)
				e.hostSh(tt.user)
				e.hostSh(e.expand(tt.attack))
				if !ran(e) {
					t.Fatal("planted on the host, the user's git ran nothing: the attack tests nothing")
				}
			})
			t.Run("server", func(t *testing.T) {
				e := plantEnv(t)
				e.hostSh(tt.user)
				s := e.serve()
				res, _ := s.sh(t, e.expand(tt.attack))
				if ran(e) {
					t.Errorf("the user's git ran what the call planted\n%s", text(res))
				}
				if !strings.Contains(text(res), "moved "+tt.moved+" aside") || !strings.Contains(text(res), "not below a .git directory") {
					t.Errorf("no note of %s moved aside for where its git directory or work tree lies:\n%s", tt.moved, text(res))
				}
			})
		})
	}
	// The user's both: honest calls move nothing, and the user's git
	// works on in each.
	t.Run("the user's both", func(t *testing.T) {
		e := plantEnv(t)
		e.hostSh(dots + " && " + proj)
		s := e.serve()
		for _, script := range []string{
			`echo x > notes.txt && git -C proj commit -q --allow-empty -m agent && git -C proj status --short`,
			`git --git-dir=.dots.git status --short >/dev/null && git -C proj log -1 --format=%s`,
		} {
			res, _ := s.sh(t, script)
			if strings.Contains(text(res), "aside") {
				t.Errorf("%s: moved aside:\n%s", script, text(res))
			}
		}
		e.git("--git-dir=.dots.git", "status", "--short")
		e.git("-C", "proj", "status", "--short")
	})
}
