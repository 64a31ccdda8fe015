package gitguard

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A grant the user made writable by name inside the workspace (husky's
// .husky, which the README suggests) keeps what is in it: the user's
// repository's hooks written there stay. A repository a call makes
// elsewhere in the workspace, whose git directory or config lies in the
// grant, is judged all the same: the user's git obeys it where its entry
// is; so is a repository in the grant, which the user's git enters as a
// submodule. Watched and walked.
func TestExemptGrantCoversOnlyWhatIsInIt(t *testing.T) {
	const setup = "git init -q && git config core.hooksPath .husky/_ && mkdir -p .husky/_ src/lib"
	const attack = `git init -q --bare .husky/_/cache.git && git -C .husky/_/cache.git config core.bare false && git -C .husky/_/cache.git config core.fsmonitor "$PWN" && printf 'gitdir: ../../.husky/_/cache.git\n' > src/lib/.git`
	ctl := newFixture(t)
	ctl.sh(setup)
	ctl.sh(attack)
	if !ctl.userGit("src/lib") {
		t.Fatal("control: the planted repository did not run in the user's git; the test tests nothing")
	}
	for _, walk := range []bool{false, true} {
		t.Run(map[bool]string{false: "watched", true: "walked"}[walk], func(t *testing.T) {
			f := newFixture(t)
			f.walk = walk
			f.sh(setup)
			f.cfg.Exempt = []string{filepath.Join(f.root, ".husky")}
			f.start()
			// The user's husky hooks, written by a call (npm install runs
			// husky): the user granted that directory, so they stay.
			if notes := f.call(`printf '#!/bin/sh\nexit 0\n' > .husky/_/pre-commit && chmod +x .husky/_/pre-commit`); len(notes) != 0 {
				t.Fatalf("hooks written in the grant were judged: %q", notes)
			}
			if _, err := os.Stat(filepath.Join(f.root, ".husky/_/pre-commit")); err != nil {
				t.Fatal(err)
			}
			notes := f.call(attack)
			if !strings.Contains(strings.Join(notes, "\n"), "moved src/lib/.git aside") {
				t.Errorf("notes %q, want the planted repository's entry moved aside", notes)
			}
			if f.userGit("src/lib") {
				t.Error("the planted repository ran in the user's git")
			}
			// A repository inside the grant, in the user's work tree, is
			// judged as any other (from the eleventh git red-team round:
			// a gitlink a call stages has the user's git status enter
			// it): one with plain settings stays, a setting planted in
			// it later goes.
			if notes := f.call(`git init -q .husky/_/other`); len(notes) != 0 {
				t.Errorf("a plain repository inside the grant was moved: %q", notes)
			}
			if notes := f.call(`git -C .husky/_/other config core.fsmonitor "$PWN"`); !strings.Contains(strings.Join(notes, "\n"), "moved .husky/_/other/.git/config aside") && !strings.Contains(strings.Join(notes, "\n"), "moved .husky/_/other/.git aside") {
				t.Errorf("a setting planted in a repository inside the grant: notes %q", notes)
			}
		})
	}
}
