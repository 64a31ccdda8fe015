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
// is. Watched and walked.
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
			// A repository inside the grant itself is the user's to keep.
			if notes := f.call(`git init -q .husky/_/other && git -C .husky/_/other config core.pager less`); len(notes) != 0 {
				t.Errorf("a repository inside the grant was judged: %q", notes)
			}
		})
	}
}
