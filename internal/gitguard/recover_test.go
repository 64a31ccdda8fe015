package gitguard

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// killedCall runs attack in a call of a server that is then killed (its
// journal's lock goes with it, the journal stays), and returns the notes of
// the next server's first call: its recovery's. Without guard, attack just
// runs. The user's setup is older than the call.
func killedCall(t *testing.T, f *fixture, guard bool, attack func(f *fixture)) []string {
	t.Helper()
	if !guard {
		attack(f)
		return nil
	}
	f.cfg.StateDir = filepath.Join(filepath.Dir(f.root), "state")
	time.Sleep(1100 * time.Millisecond) // the journal counts from a second before the call
	a := f.start()
	if _, err := a.Begin(); err != nil {
		t.Fatal(err)
	}
	attack(f)
	a.journal.f.Close()
	a.journal = nil
	f.start()
	return f.call("")
}

// inPlaceIndexHook rewrites the index of the repository at the root in
// place (same inode, same birth time) with one that also holds an entry
// the user's git checkout -- . writes as .git/hooks/pre-commit.
func inPlaceIndexHook(t *testing.T, f *fixture) {
	t.Helper()
	idx := filepath.Join(filepath.Dir(f.root), "index.new")
	f.sh(`cp .git/index "` + idx + `" && h=$(printf '#!/bin/sh\n%s\n' "$PWN" | git hash-object -w --stdin) &&
GIT_INDEX_FILE="` + idx + `" git update-index --add --chmod=+x --cacheinfo "100755,$h,.zzz/zzzzz/pre-commit"`)
	renameIndexEntry(t, idx, ".zzz/zzzzz/pre-commit", ".git/hooks/pre-commit", false)
	f.sh(`cat "` + idx + `" > .git/index`)
}

// A server killed during a call leaves what the call changed in place in
// the user's git directories: a stopped operation's to-do list, a legacy
// remotes directory, rerere's record, the index. None of them is kept
// read-only during a call, and none is born anew when a command writes in
// it: the next server's recovery judges each whose ctime, or an entry's,
// moved since the call began.
func TestKilledServerCallChangedInPlace(t *testing.T) {
	const stoppedRebase = `git init -q && git commit -q --allow-empty -m a && echo 1 > u && git add u && git commit -qm u1 &&
GIT_SEQUENCE_EDITOR="sed -i s/^pick/edit/" git rebase -q -i HEAD~1 && test -d .git/rebase-merge`
	userRun := func(f *fixture, dir string, args ...string) {
		cmd := exec.Command(f.git, append([]string{"-C", filepath.Join(f.root, dir)}, args...)...)
		cmd.Env = f.env()
		cmd.Run()
	}
	marked := func(f *fixture) bool {
		_, err := os.Lstat(f.marker)
		return err == nil
	}
	for _, tt := range []struct {
		name   string
		setup  string // the user's, before the server starts
		attack func(f *fixture)
		harmed func(f *fixture) bool
		note   string
	}{
		{name: "an exec line appended to the user's stopped rebase", setup: stoppedRebase,
			attack: func(f *fixture) { f.sh(`echo "exec $PWN" >> .git/rebase-merge/git-rebase-todo`) },
			harmed: func(f *fixture) bool {
				userRun(f, ".", "-c", "core.editor=true", "rebase", "--continue")
				return marked(f)
			},
			note: `moved .git/rebase-merge aside to .git/rebase-merge.quarantined-by-nanosandbox: its rebase state .git/rebase-merge holds the to-do line "exec touch `},
		{name: "a remote in git init's branches directory", setup: otherRepo + ` && git init -q && git commit -q --allow-empty -m a && mkdir -p .git/branches`,
			attack: func(f *fixture) {
				f.sh(`printf '%s#planted\n' "$(cd .. && pwd)/home/other.git" > .git/branches/origin`)
			},
			harmed: func(f *fixture) bool {
				userRun(f, ".", "push", "-q")
				return marked(f)
			},
			note: `moved .git/branches aside to .git/branches.quarantined-by-nanosandbox: its legacy remotes directory .git/branches holds "origin"`},
		{name: "rerere's record rewritten in place", setup: userRepo + ` && : > .git/MERGE_RR`,
			attack: func(f *fixture) {
				f.sh(`id=$(printf '%040d' 7) && mkdir -p .git/rr-cache/$id && printf '%s\t%s\0' $id "$(cd .. && pwd)/home/secret" >> .git/MERGE_RR`)
			},
			harmed: func(f *fixture) bool {
				userRun(f, ".", "commit", "-q", "--allow-empty", "-m", "user")
				out, _ := exec.Command("grep", "-rl", "TOPSECRET", f.root).Output()
				return len(out) > 0
			},
			note: `moved .git/MERGE_RR aside to .git/MERGE_RR.quarantined-by-nanosandbox: its rerere record .git/MERGE_RR was made or changed by a call`},
		{name: "the index rewritten in place", setup: "git init -q && echo a > a && git add a && git commit -qm one",
			attack: func(f *fixture) { inPlaceIndexHook(t, f) },
			harmed: func(f *fixture) bool { return userCheckoutCommit(f, ".") },
			note:   `moved .git/index aside to .git/index.quarantined-by-nanosandbox: its index .git/index names a path git refuses`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			checkHarm(t, func(guard bool) (bool, []string) {
				f := newFixture(t)
				if err := os.WriteFile(filepath.Join(f.home, "secret"), []byte("TOPSECRET\n"), 0o600); err != nil {
					t.Fatal(err)
				}
				f.sh(tt.setup)
				notes := killedCall(t, f, guard, tt.attack)
				if guard && !strings.Contains(strings.Join(notes, "\n"), "did not finish") {
					t.Errorf("the notes do not say the call was cut short: %q", notes)
				}
				os.Remove(f.marker)
				return tt.harmed(f), notes
			}, tt.note)
		})
	}
}

// What a killed call left as it was, and what it changed honestly, stays:
// the user's own stopped rebase --exec, untouched, and an index git
// rewrote.
func TestKilledServerCallHonestInPlace(t *testing.T) {
	f := newFixture(t)
	f.sh(`git init -q && git commit -q --allow-empty -m base && for i in 1 2; do echo $i >> u && git add u && git commit -qm u$i; done &&
GIT_SEQUENCE_EDITOR="sed -i s/^pick/edit/" git rebase -q -i --exec true HEAD~2 && : > .git/MERGE_RR && mkdir -p .git/branches`)
	notes := killedCall(t, f, true, func(f *fixture) { f.sh(`echo x > new && git add new && git status --porcelain`) })
	if len(notes) != 0 {
		t.Errorf("recovery judged what was the user's or honest: %q", notes)
	}
	for _, p := range []string{".git/rebase-merge/git-rebase-todo", ".git/index", ".git/MERGE_RR", ".git/branches"} {
		if _, err := os.Lstat(filepath.Join(f.root, p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	if out := f.sh("git diff --cached --name-only"); out != "new\n" {
		t.Errorf("what the call staged: %q", out)
	}
}
