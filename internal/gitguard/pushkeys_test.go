package gitguard

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// grantedRepo is a bare repository of the user's beside the root, with
// branches main and release-1: the user grants it read-only (Readable).
const grantedRepo = `g=$(cd .. && pwd)/granted/other.git && git init -q --bare "$g" && git init -q ../seed && git -C ../seed commit -q --allow-empty -m x &&
git -C ../seed branch -M main && git -C ../seed branch release-1 && git -C ../seed push -q "$g" main release-1 && rm -rf ../seed`

// A clone of a repository the user granted read-only, made in a call, is
// an honest flow whose remote stays; but remote.*.mirror and remote.*.push
// in its config change what the user's plain git push there writes:
// mirror deletes every ref the clone lacks, a push refspec deletes or
// overwrites what it names. The clone is moved aside.
func TestEndMovesPushChangingKeysAside(t *testing.T) {
	const clone = `git clone -q ../granted/other.git vendor/other && cd vendor/other && `
	for _, tt := range []struct{ name, attack, note string }{
		{name: "remote.origin.mirror", attack: clone + `git config remote.origin.mirror true`,
			note: "moved vendor/other/.git aside to vendor/other/.git.quarantined-by-nanosandbox: its config vendor/other/.git/config sets remote.origin.mirror"},
		{name: "remote.origin.push deleting a branch", attack: clone + `git config remote.origin.push :refs/heads/release-1`,
			note: "its config vendor/other/.git/config sets remote.origin.push"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			checkHarm(t, func(guard bool) (bool, []string) {
				f := newFixture(t)
				granted := filepath.Join(filepath.Dir(f.root), "granted")
				f.cfg.Readable = []string{granted}
				f.sh(grantedRepo)
				var notes []string
				if guard {
					f.start()
					notes = f.call(tt.attack)
				} else {
					f.sh(tt.attack)
				}
				cmd := exec.Command(f.git, "-C", filepath.Join(f.root, "vendor/other"), "push", "-q")
				cmd.Env = f.env()
				cmd.Run()
				return exec.Command(f.git, "--git-dir", filepath.Join(granted, "other.git"), "rev-parse", "-q", "--verify", "refs/heads/release-1").Run() != nil, notes
			}, tt.note)
		})
	}
}

// What git clone writes stays: a plain clone of the grant, and a mirror
// clone whose mirror setting is taken off in the call. A mirror clone as
// git clone --mirror leaves it is moved aside, as it sets
// remote.origin.mirror.
func TestHonestClonesOfGrantStay(t *testing.T) {
	f := newFixture(t)
	f.cfg.Readable = []string{filepath.Join(filepath.Dir(f.root), "granted")}
	f.sh(grantedRepo)
	f.start()
	if notes := f.call(`git clone -q ../granted/other.git a && git clone -q --bare ../granted/other.git b.git &&
git clone -q --mirror ../granted/other.git c.git && git -C c.git config --unset remote.origin.mirror`); len(notes) != 0 {
		t.Errorf("honest clones were judged: %q", notes)
	}
	for _, p := range []string{"a/.git", "b.git/HEAD", "c.git/HEAD"} {
		if _, err := os.Lstat(filepath.Join(f.root, p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	notes := f.call(`git clone -q --mirror ../granted/other.git m.git`)
	if want := "moved m.git/HEAD aside to m.git/HEAD.quarantined-by-nanosandbox: its config m.git/config sets remote.origin.mirror"; !strings.Contains(strings.Join(notes, "\n"), want) {
		t.Errorf("notes %q, want one holding %q", notes, want)
	}
}

// Settings an agent routinely sets in a repository it made, which run
// nothing and lead nowhere, keep the repository; a setting that names a
// program does not, and the note says why in those words.
func TestQuietKeysKeepANewRepository(t *testing.T) {
	f := newFixture(t)
	f.start()
	for _, kv := range [][2]string{{"commit.gpgsign", "false"}, {"color.ui", "never"}, {"advice.detachedHead", "false"},
		{"merge.conflictStyle", "diff3"}, {"status.showUntrackedFiles", "all"}, {"diff.algorithm", "histogram"},
		{"log.date", "iso"}, {"submodule.recurse", "true"}, {"color.diff.meta", "blue"},
		{"index.threads", "true"}, {"core.fsmonitor", "false"}} {
		dir := strings.ReplaceAll(kv[0], ".", "-")
		if notes := f.call("git init -q " + dir + " && git -C " + dir + " config " + kv[0] + " " + kv[1]); len(notes) != 0 {
			t.Errorf("%s=%s: the new repository was judged: %q", kv[0], kv[1], notes)
		}
	}
	if notes := f.call(`git init -q fsm && git -C fsm config core.fsmonitor "$PWN"`); !strings.Contains(strings.Join(notes, "\n"), "sets core.fsmonitor") {
		t.Errorf("a core.fsmonitor that names a program: notes %q", notes)
	}
	notes := f.call(`git init -q twohead && git -C twohead config pull.twohead "$PWN"`)
	want := "sets pull.twohead, a setting outside the short list the sandbox knows to run nothing and lead nowhere"
	if !strings.Contains(strings.Join(notes, "\n"), want) {
		t.Errorf("notes %q, want one holding %q", notes, want)
	}
}
