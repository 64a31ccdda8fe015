package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The fifth red-team round: a symbolic link a command puts inside the
// user's git directory, through which the user's own git later writes
// outside the workspace (it appends reflogs and writes FETCH_HEAD,
// COMMIT_EDITMSG, MERGE_MSG, rerere's cache and packs with a plain open
// that follows it). $OUT is a directory of the user's outside the
// workspace, holding a shell rc file; the planting got through when the
// user's git adds anything there or changes that file. A reflog line
// appended to the rc file runs the branch name's command when sourced.

type linkAttack struct {
	name  string
	setup string // the user's, on the host, in the workspace
	steps []string
	user  [][]string // the user's git, on the host, afterwards
	note  string     // what the calls say; if unset, that a link was removed
}

// commonWithoutHEAD makes a repository w whose git directory r names, in
// commondir, a directory c that holds its objects, refs and reflogs but no
// HEAD: git works there, and c is no git directory to the guard's finders.
const commonWithoutHEAD = `git init -q w && git -C w commit -q --allow-empty -m w && mv w/.git c && mkdir r && mv c/HEAD c/index r/ && mkdir r/logs && mv c/logs/HEAD r/logs/ &&
echo ../c > r/commondir && printf 'gitdir: ../r\n' > w/.git && git -C w status -s`

const linkRepo = `git init -q && git commit -q --allow-empty -m a`

var linkAttacks = []linkAttack{
	{name: "a reflog into a shell rc", setup: linkRepo,
		steps: []string{`rm .git/logs/HEAD && ln -s "$OUT/bashrc" .git/logs/HEAD && git branch 'a;touch${IFS}$PWNED;#' && git symbolic-ref HEAD 'refs/heads/a;touch${IFS}$PWNED;#'`},
		user:  [][]string{{"checkout", "-q", "master"}, {"commit", "-q", "--allow-empty", "-m", "second"}}},
	{name: "FETCH_HEAD", setup: linkRepo,
		steps: []string{`ln -s "$OUT/fetchhead" .git/FETCH_HEAD`},
		user:  [][]string{{"fetch", "-q", ".", "master"}}},
	{name: "COMMIT_EDITMSG over an existing file", setup: linkRepo,
		steps: []string{`ln -sf "$OUT/bashrc" .git/COMMIT_EDITMSG`},
		user:  [][]string{{"commit", "-q", "--allow-empty", "-m", "user msg"}}},
	{name: "the reflog directory", setup: linkRepo,
		steps: []string{`rm -r .git/logs/refs && ln -s "$OUT" .git/logs/refs`},
		user:  [][]string{{"checkout", "-q", "-b", "newbranch"}}},
	{name: "the pack directory", setup: linkRepo,
		steps: []string{`rmdir .git/objects/pack && ln -s "$OUT" .git/objects/pack`},
		user:  [][]string{{"gc", "-q"}}},
	{name: "MERGE_MSG with a planted tag's text", setup: linkRepo + ` && echo a > f && git add f && git commit -qm f`,
		steps: []string{`git checkout -qb side && echo side > f && git commit -qam side && git checkout -q master && echo main > f && git commit -qam main &&
git tag -a v1 side -m "v1
touch $PWNED" && ln -sf "$OUT/bashrc" .git/MERGE_MSG`},
		user: [][]string{{"merge", "v1"}}},
	{name: "rerere's cache", setup: linkRepo + ` && echo a > f && git add f && git commit -qm f && git checkout -qb side && echo b > f && git commit -qam b && git checkout -q master && echo c > f && git commit -qam c`,
		steps: []string{`ln -s "$OUT" .git/rr-cache`},
		user:  [][]string{{"merge", "-q", "side"}}},
	// Left by a first call where no git directory was, and made one by
	// a second: the link is older than the call that makes it count.
	{name: "a directory made a git directory later", setup: linkRepo,
		steps: []string{
			`git init -q w && mv w/.git r && printf 'gitdir: ../r\n' > w/.git && git -C w commit -q --allow-empty -m w && rm r/logs/HEAD r/HEAD && ln -s "$OUT/bashrc" r/logs/HEAD`,
			`echo 'ref: refs/heads/master' > r/HEAD`},
		user: [][]string{{"-C", "w", "commit", "-q", "--allow-empty", "-m", "user"}}},
	// Red team round 6: a commondir that names a directory without HEAD,
	// where the finders looked for no link.
	{name: "a reflog in a commondir without HEAD", setup: linkRepo,
		steps: []string{commonWithoutHEAD + ` && ln -sf "$OUT/bashrc" c/logs/refs/heads/master`},
		user:  [][]string{{"-C", "w", "commit", "-q", "--allow-empty", "-m", "user"}},
		note:  "names a directory that is not a whole git directory"},
	{name: "a commondir's HEAD taken away later", setup: linkRepo,
		steps: []string{commonWithoutHEAD + ` && echo 'ref: refs/heads/master' > c/HEAD`,
			`rm c/HEAD && ln -sf "$OUT/bashrc" c/logs/refs/heads/master`},
		user: [][]string{{"-C", "w", "commit", "-q", "--allow-empty", "-m", "user"}},
		note: "names a directory that is not a whole git directory"},
}

func TestEscapeGitLinksInGitDirectory(t *testing.T) {
	for _, tt := range linkAttacks {
		t.Run(tt.name, func(t *testing.T) {
			t.Run("control", func(t *testing.T) {
				e, out := linkEnv(t, tt)
				for _, s := range tt.steps {
					e.hostSh(linkExpand(e, out, s))
				}
				if !linkUser(e, out, tt) {
					t.Fatal("planted on the host, the user's git wrote nothing outside: the attack tests nothing")
				}
			})
			t.Run("one-shot", func(t *testing.T) {
				e, out := linkEnv(t, tt)
				var notes []string
				for _, s := range tt.steps {
					_, stderr, _ := e.sh(linkExpand(e, out, s))
					notes = append(notes, stderr)
				}
				if linkUser(e, out, tt) {
					t.Errorf("the user's git wrote outside through a planted link\nstderr of the calls: %q", notes)
				}
				if !strings.Contains(strings.Join(notes, "\n"), tt.said()) {
					t.Errorf("no call said %q: %q", tt.said(), notes)
				}
			})
			t.Run("mcp", func(t *testing.T) {
				e, out := linkEnv(t, tt)
				s := e.serve()
				var texts []string
				for _, step := range tt.steps {
					res, _ := s.sh(t, linkExpand(e, out, step))
					texts = append(texts, text(res))
				}
				if linkUser(e, out, tt) {
					t.Errorf("the user's git wrote outside through a planted link\nresults: %q", texts)
				}
				if !strings.Contains(strings.Join(texts, "\n"), tt.said()) {
					t.Errorf("no result said %q: %q", tt.said(), texts)
				}
				if _, o := s.sh(t, "echo ok"); o.Stdout != "ok\n" {
					t.Errorf("the next call: %+v", o)
				}
			})
		})
	}
}

func (tt linkAttack) said() string {
	if tt.note != "" {
		return tt.note
	}
	return "a symbolic link made inside a git directory"
}

// linkEnv is a workspace set up as tt's user has it, and the user's
// directory outside it, with a shell rc file.
func linkEnv(t *testing.T, tt linkAttack) (*env, string) {
	e := plantEnv(t)
	out := filepath.Join(e.home, "out")
	e.write(filepath.Join(out, "bashrc"), "export SAFE=1\n", 0o644)
	e.own(out)
	e.hostSh(tt.setup)
	return e, out
}

func linkExpand(e *env, out, s string) string {
	return strings.NewReplacer("$OUT", out, "$PWNED", e.pwned()).Replace(s)
}

// linkUser runs the user's git, then sources the rc file as the user's
// next shell would, and reports whether anything got outside.
func linkUser(e *env, out string, tt linkAttack) bool {
	e.t.Helper()
	// What a command wrote there itself, the sandbox refused; in the
	// control, it is the host's and does not count.
	os.RemoveAll(out)
	e.write(filepath.Join(out, "bashrc"), "export SAFE=1\n", 0o644)
	e.own(out)
	os.Remove(e.pwned())
	for _, args := range tt.user {
		e.gitTry(args...)
	}
	exec.Command("sh", "-c", ". "+filepath.Join(out, "bashrc")).Run()
	ents, _ := os.ReadDir(out)
	b, _ := os.ReadFile(filepath.Join(out, "bashrc"))
	_, err := os.Lstat(e.pwned())
	return len(ents) != 1 || string(b) != "export SAFE=1\n" || err == nil
}
