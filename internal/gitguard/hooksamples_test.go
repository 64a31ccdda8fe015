package gitguard

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A hook sample is inert while it keeps its name, but guides tell users to
// enable one by renaming it (and core.fsmonitor can name
// fsmonitor-watchman.sample as it is): a sample rewritten in a repository
// made in a call runs then. Each sample is compared with the one the
// host's git installs; one that differs, or that git does not install,
// counts as a hook.
func TestEndMovesRewrittenSamplesAside(t *testing.T) {
	for _, tt := range []struct{ name, attack, sample, note string }{
		{name: "a rewritten sample in a new repository",
			attack: `git init -q sub && printf '#!/bin/sh\n%s\n' "$PWN" > sub/.git/hooks/pre-commit.sample`, sample: "pre-commit",
			note: "moved sub/.git aside to sub/.git.quarantined-by-nanosandbox: its hooks directory sub/.git/hooks holds pre-commit.sample, which is not the sample git installs"},
		{name: "a sample git does not install",
			attack: `git init -q sub && printf '#!/bin/sh\n%s\n' "$PWN" > sub/.git/hooks/post-commit.sample && chmod +x sub/.git/hooks/post-commit.sample`, sample: "post-commit",
			note: "holds post-commit.sample, which is not the sample git installs"},
		{name: "a sample grown past git's, rewritten in place",
			attack: `git init -q sub && h=sub/.git/hooks/pre-commit.sample && { printf '#!/bin/sh\n%s\n' "$PWN"; cat $h; } > ../s && cat ../s > $h`, sample: "pre-commit",
			note: "holds pre-commit.sample, which is not the sample git installs"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			checkHarm(t, func(guard bool) (bool, []string) {
				f := newFixture(t)
				var notes []string
				if guard {
					f.start()
					notes = f.call(tt.attack)
				} else {
					f.sh(tt.attack)
				}
				// The user enables the sample, as the guides say.
				hooks := filepath.Join(f.root, "sub/.git/hooks")
				os.Rename(filepath.Join(hooks, tt.sample+".sample"), filepath.Join(hooks, tt.sample))
				cmd := exec.Command(f.git, "-C", filepath.Join(f.root, "sub"), "commit", "-q", "--allow-empty", "-m", "user")
				cmd.Env = f.env()
				cmd.Run()
				_, err := os.Lstat(f.marker)
				return err == nil, notes
			}, tt.note)
		})
	}
}

// The samples git init and git clone install are git's own: they stay,
// in a watched and a walked guard, and a bare repository's too.
func TestHonestSamplesStay(t *testing.T) {
	runWalks(t, "git init and git clone", func(t *testing.T, walk bool) {
		f := newFixture(t)
		f.walk = walk
		f.start()
		notes := f.call(`git init -q a && git -C a commit -q --allow-empty -m a && git clone -q a b && git init -q --bare c.git && git clone -q --bare a d.git && ls a/.git/hooks | grep -q '\.sample$'`)
		if len(notes) != 0 {
			t.Errorf("honest repositories were judged: %q", notes)
		}
		if out := f.sh("ls -a . a b"); strings.Contains(out, "quarantined") {
			t.Errorf("something was moved aside: %s", out)
		}
	})
}

// A trusted repository's samples as they were stay when its hooks
// directory is judged (nothing keeps it read-only when Unmounted): a
// repository an older git made keeps that git's samples, and the user may
// have edited one.
func TestTrustedSamplesStay(t *testing.T) {
	f := newFixture(t)
	f.cfg.Unmounted = true
	f.sh(`git init -q && echo '# the user was here' >> .git/hooks/pre-commit.sample`)
	f.start()
	if notes := f.call(`rm .git/hooks/update.sample`); len(notes) != 0 {
		t.Errorf("the user's own samples were judged: %q", notes)
	}
	notes := f.call(`echo 'true' >> .git/hooks/pre-push.sample`)
	if want := "moved .git/hooks aside to .git/hooks.quarantined-by-nanosandbox: its hooks directory .git/hooks holds pre-push.sample, which is not the sample git installs"; !strings.Contains(strings.Join(notes, "\n"), want) {
		t.Errorf("notes %q, want one holding %q", notes, want)
	}
}

// The samples are asked of git only when a hooks directory holding one is
// judged, and once.
func TestSamplesAskedLazily(t *testing.T) {
	f := newFixture(t)
	asked := 0
	ask := askSamples
	askSamples = func(git string) (map[string][]byte, error) { asked++; return ask(git) }
	t.Cleanup(func() { askSamples = ask; forgetSamples() })
	forgetSamples()
	f.start()
	f.call(`mkdir x && echo y > x/y`)
	if asked != 0 {
		t.Errorf("a call that made no repository asked git for its samples %d times", asked)
	}
	f.call(`git init -q a && git init -q b`)
	f.call(`git init -q c`)
	if asked != 1 {
		t.Errorf("git was asked for its samples %d times, want 1", asked)
	}
}
