package gitguard

import (
	"os/exec"
	"strings"
	"testing"
)

// A key of keptKeys is plain only as the trusted version of the file held
// it: extensions.refStorage other than files (git then reads refs from a
// store the command filled) and a promisor remote (the user's git diff
// fetches missing objects from its URL, unasked).
func TestJudgeConfigKeptKeys(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("needs git")
	}
	list := gitLister(git)
	const partial = "[core]\n\trepositoryformatversion = 1\n[extensions]\n\tpartialClone = origin\n[remote \"origin\"]\n\turl = https://example.com/r\n\tpromisor = true\n\tpartialclonefilter = blob:none\n"
	for _, tt := range []struct{ name, cfg, prev, want string }{
		{"refStorage files", "[extensions]\n\trefStorage = files\n", "", ""},
		{"refStorage reftable made", "[extensions]\n\trefStorage = reftable\n", "", "it sets extensions.refstorage"},
		{"refStorage reftable as trusted", "[extensions]\n\trefStorage = reftable\n[user]\n\tname = x\n", "[extensions]\n\trefStorage = reftable\n", ""},
		{"refStorage changed to reftable", "[extensions]\n\trefStorage = reftable\n", "[extensions]\n\trefStorage = files\n", "it sets extensions.refstorage"},
		{"a partial clone made", partial, "", "it sets extensions.partialclone"},
		{"a partial clone as trusted", partial + "[user]\n\tname = x\n", partial, ""},
		{"a promisor remote added", partial + "[remote \"evil\"]\n\tpromisor = true\n", partial, "it sets remote.evil.promisor"},
		{"the promisor remote renamed", strings.Replace(partial, "partialClone = origin", "partialClone = evil", 1), partial, "it sets extensions.partialclone"},
		{"a filter made", "[remote \"origin\"]\n\tpartialclonefilter = blob:none\n", "", "it sets remote.origin.partialclonefilter"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var prev []entry
			if tt.prev != "" {
				if prev, err = list([]byte(tt.prev)); err != nil {
					t.Fatal(err)
				}
			}
			got := judgeConfigSince(list, []byte(tt.cfg), prev)
			if !strings.HasPrefix(got, tt.want) || (tt.want == "") != (got == "") {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// The user's own partial clone stays trusted through a call that changes
// another key of its config; one made in a call goes aside.
func TestPartialCloneTrustedStays(t *testing.T) {
	f := newFixture(t)
	f.sh(`git init -q && git config core.repositoryformatversion 1 && git config extensions.partialClone origin &&
git config remote.origin.url https://example.com/r && git config remote.origin.promisor true`)
	f.start()
	if notes := f.call(`git config user.name Agent`); len(notes) != 0 {
		t.Errorf("the user's partial clone got notes %q", notes)
	}
	notes := f.call(`git init -q sub && git -C sub config remote.x.url https://example.com/x && git -C sub config remote.x.promisor true`)
	if !strings.Contains(strings.Join(notes, "\n"), "remote.x.promisor") {
		t.Errorf("notes %q, want the partial clone made in the call moved aside", notes)
	}
}

// Where a trusted repository's config is not kept read-only during a call
// (Config.Unmounted, or past maxProtections), a promisor remote or a
// reftable store set in it there moves the config aside.
func TestKeptKeysSetInTrustedConfig(t *testing.T) {
	for _, script := range []string{
		`git config core.repositoryformatversion 1 && git config extensions.partialClone origin`,
		`git config remote.origin.promisor true`,
		`git config core.repositoryformatversion 1 && git config extensions.refStorage reftable`,
	} {
		f := newFixture(t)
		f.sh(`git init -q && git config remote.origin.url https://example.com/r`)
		f.start()
		if notes := f.call(script); !strings.Contains(strings.Join(notes, "\n"), "aside") {
			t.Errorf("%s: notes %q, want the config moved aside", script, notes)
		}
	}
}
