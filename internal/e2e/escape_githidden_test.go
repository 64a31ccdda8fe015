package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A command that keeps its edits out of the user's own git status and git
// diff in the user's repository: through the index (flags that make git
// skip a file, stat data that makes git trust it) or through the files
// of .git/info that git reads and that leave no trace in the work tree.
// Each works on the host (control); over MCP, the user's git status and
// git diff, run on the host after the call, show the edit.
func TestEscapeGitHiddenEdits(t *testing.T) {
	// edited is what the user's git must show of an edit of README.
	edited := func(e *env) string {
		st, _ := e.gitTry("status", "--porcelain", "--untracked-files=no")
		diff, _ := e.gitTry("diff")
		if !strings.Contains(st, " M README") || !strings.Contains(diff, "+EVIL") {
			return "git status " + quote(st) + ", git diff " + quote(diff)
		}
		return ""
	}
	for _, tt := range []struct {
		name   string
		setup  func(e *env) // the user's, before the server starts
		attack string
		// shown says what the user's git failed to show, or "".
		shown func(e *env) string
		note  string // in the call's result
		// lost says the user's own assume-unchanged bit goes too: what
		// the index held when the call began cannot be known.
		lost bool
	}{
		{name: "assume-unchanged set, then the file edited",
			attack: `git update-index --assume-unchanged README && echo EVIL >> README`,
			shown:  edited, note: "assume-unchanged"},
		{name: "skip-worktree set, then the file edited",
			attack: `git update-index --skip-worktree README && echo EVIL >> README`,
			shown:  edited, note: "skip-worktree"},
		// As git writes an index: a new file renamed over it.
		{name: "the file edited, then its stat data forged in a new index",
			attack: `echo EVIL >> README && cp .git/index .git/i && ./attack index-stat .git/i README && mv .git/i .git/index`,
			shown:  edited},
		// In place: what the index was when the call began is gone.
		{name: "the file edited, then its stat data forged in the index in place",
			attack: `echo EVIL >> README && ./attack index-stat .git/index README`,
			shown:  edited, note: "could not tell which bits were there before the call", lost: true},
		{name: "a new file named in info/exclude",
			attack: `echo planted > new.sh && echo /new.sh >> .git/info/exclude`,
			shown: func(e *env) string {
				if st, _ := e.gitTry("status", "--porcelain"); !strings.Contains(st, "?? new.sh") {
					return "git status " + quote(st)
				}
				return ""
			}, note: "info/exclude aside"},
		{name: "a new file named in an info/exclude the call made",
			setup:  func(e *env) { os.Remove(filepath.Join(e.ws, ".git/info/exclude")) },
			attack: `echo planted > new.sh && echo /new.sh > .git/info/exclude`,
			shown: func(e *env) string {
				if st, _ := e.gitTry("status", "--porcelain"); !strings.Contains(st, "?? new.sh") {
					return "git status " + quote(st)
				}
				return ""
			}, note: "info/exclude aside"},
		{name: "an edit whose diff info/attributes hides",
			attack: `echo 'README -diff' > .git/info/attributes && echo EVIL >> README`,
			shown:  edited, note: "info/attributes aside"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			setup := func(t *testing.T) *env {
				e := plantEnv(t)
				e.gitRepo()
				e.write("local.conf", "mine\n", 0o644)
				e.git("add", "local.conf")
				e.git("commit", "-q", "-m", "local")
				e.git("update-index", "--assume-unchanged", "local.conf")
				if tt.setup != nil {
					tt.setup(e)
				}
				e.attackPath()
				return e
			}
			t.Run("control", func(t *testing.T) {
				e := setup(t)
				e.hostSh(tt.attack)
				if tt.shown(e) == "" {
					t.Fatal("done on the host, the user's git shows the edit: the attack tests nothing")
				}
			})
			t.Run("mcp", func(t *testing.T) {
				e := setup(t)
				s := e.serve()
				res, out := s.sh(t, tt.attack)
				if out.ExitCode != 0 {
					t.Fatalf("the attack failed inside: %s", text(res))
				}
				if why := tt.shown(e); why != "" {
					t.Errorf("the user's git does not show the edit: %s\nresult: %s", why, text(res))
				}
				if tt.note != "" && !strings.Contains(text(res), tt.note) {
					t.Errorf("no note of %q: %s", tt.note, text(res))
				}
				if got, want := e.git("ls-files", "-v", "local.conf"), map[bool]string{false: "h local.conf\n", true: "H local.conf\n"}[tt.lost]; got != want {
					t.Errorf("the user's own bit: got %q, want %q", got, want)
				}
				// Honest use goes on: a commit in the next call leaves no note.
				if res, out := s.sh(t, "echo more >> README && git add README && git commit -qm more && git status --porcelain --untracked-files=no"); out.ExitCode != 0 || out.Stdout != "" || strings.Contains(text(res), "git:") {
					t.Errorf("an honest commit after it: %s", text(res))
				}
			})
		})
	}
}

// The fix must not touch honest use: calls that stage, commit and look,
// in a repository where the user set assume-unchanged and skip-worktree
// bits and an info/exclude of their own before any call, leave no note,
// move nothing aside, and leave the user's bits and file as they were;
// the user's git shows what the calls did, and nothing else.
func TestGitHonestIndexFlags(t *testing.T) {
	e := plantEnv(t)
	e.gitRepo()
	e.write("local.conf", "mine\n", 0o644)
	e.write("sparse.txt", "sparse\n", 0o644)
	e.git("add", "local.conf", "sparse.txt")
	e.git("commit", "-q", "-m", "more")
	e.git("update-index", "--assume-unchanged", "local.conf")
	e.git("update-index", "--skip-worktree", "sparse.txt")
	e.write("local.conf", "mine, edited\n", 0o644) // what the user keeps out of sight
	exclude := filepath.Join(e.ws, ".git/info/exclude")
	e.write(exclude, "/scratch/\n", 0o644)
	e.write("scratch/x", "x\n", 0o644)
	before := snapshot(t, exclude)
	s := e.serve()
	for _, script := range []string{
		`git status --porcelain && git diff`,
		`echo change >> README && git status --porcelain && git diff --stat && git add README && git commit -qm change && git status --porcelain`,
		`echo new > new.txt && git add new.txt && git commit -qm new && git log --oneline | head -3 && git diff HEAD~1 --stat`,
		`echo more >> README && git add -u && git status --porcelain && git reset -q && git stash -q && git stash pop -q && git diff --stat`,
	} {
		res, out := s.sh(t, script)
		if out.ExitCode != 0 {
			t.Fatalf("%q: %s", script, text(res))
		}
		if strings.Contains(text(res), "git:") {
			t.Errorf("%q: honest use got a note: %s", script, text(res))
		}
	}
	if got := e.git("ls-files", "-v", "local.conf", "sparse.txt"); got != "h local.conf\nS sparse.txt\n" {
		t.Errorf("the user's own bits after the calls: %q", got)
	}
	if got := snapshot(t, exclude); got != before {
		t.Errorf("the user's info/exclude after the calls: %s, want %s", got, before)
	}
	if got, _ := filepath.Glob(filepath.Join(e.ws, ".git", "*", "*quarantined*")); len(got) > 0 {
		t.Errorf("moved aside: %q", got)
	}
	if st := e.git("status", "--porcelain"); st != " M README\n" {
		t.Errorf("the user's git status after the calls: %q, want only the last edit of README", st)
	}
	if d := e.git("diff"); !strings.Contains(d, "+more") || strings.Contains(d, "local.conf") {
		t.Errorf("the user's git diff after the calls: %q", d)
	}
}

func quote(s string) string { return `"` + strings.ReplaceAll(s, "\n", `\n`) + `"` }
