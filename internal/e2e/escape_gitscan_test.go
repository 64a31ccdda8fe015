package e2e

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// Repositories planted where the scan for git directories used to look
// away: below objects/, lfs/ and annex/ of any directory holding an entry
// named HEAD, taken for a git directory's object stores. A gitlink there in
// the user's repository is one that the user's plain git status enters.

// hiddenGitlink is a script that plants a nested repository with
// core.fsmonitor at path and registers it as a gitlink in the user's
// repository.
func hiddenGitlink(path string) string {
	return fmt.Sprintf(`git init -q %[1]s && git -C %[1]s commit -q --allow-empty -m s && git -C %[1]s config core.fsmonitor "$PWN" && git add %[1]s`, path)
}

var scanPlantAttacks = []plantAttack{
	{name: "below objects/ of a directory holding HEAD", setup: userRepo,
		steps: []string{`mkdir x && touch x/HEAD && ` + hiddenGitlink("x/objects/sub")}},
	{name: "in a fan-out directory of a directory holding HEAD", setup: userRepo,
		steps: []string{`mkdir x && touch x/HEAD && ` + hiddenGitlink("x/objects/ab/sub")}},
	{name: "below objects/ of a bare repository a call made, in a later call", setup: userRepo,
		steps: []string{`git init -q --bare x`, hiddenGitlink("x/objects/sub")}},
	{name: "below objects/ of a bare-looking directory a call made, in a later call", setup: userRepo,
		steps: []string{`mkdir -p x/objects x/refs && echo 'ref: refs/heads/main' > x/HEAD`, hiddenGitlink("x/objects/sub")}},
	{name: "HEAD planted after the repository below objects/", setup: userRepo,
		steps: []string{`mkdir -p x/objects`, hiddenGitlink("x/objects/sub") + ` && touch x/HEAD`}},
	{name: "below lfs/ of a directory holding HEAD", setup: userRepo,
		steps: []string{`mkdir x && touch x/HEAD && ` + hiddenGitlink("x/lfs/objects/ab/cd/sub")}},
	{name: "below annex/ of a directory holding HEAD", setup: userRepo,
		steps: []string{`mkdir x && touch x/HEAD && ` + hiddenGitlink("x/annex/objects/f87/4d5/KEY/sub")}},
	{name: "below the user's own git directory's lfs store", setup: userRepo,
		steps: []string{`git init -q .git/lfs/objects/ab/cd/sub && git -C .git/lfs/objects/ab/cd/sub config core.fsmonitor "$PWN"`},
		dirs:  []string{".git/lfs/objects/ab/cd/sub"}},
}

func TestEscapeGitPlantedHidden(t *testing.T) {
	for _, tt := range scanPlantAttacks {
		t.Run(tt.name, func(t *testing.T) { runPlantAttack(t, tt) })
	}
}

// A submodule named x/objects/m keeps its git directory in
// .git/modules/x/objects/m; an entry named HEAD planted in .git/modules/x
// hid it from the scan, and the user's git submodule update --init reuses
// that git directory and runs its post-checkout hook.
func TestEscapeGitPlantedHiddenModule(t *testing.T) {
	const plant = `git init -q .s && git -C .s commit -q --allow-empty -m s &&
mkdir -p .git/modules/x/objects && git init -q --separate-git-dir=.git/modules/x/objects/m x/objects/m && git -C x/objects/m commit -q --allow-empty -m m &&
git config -f .gitmodules submodule.x/objects/m.path x/objects/m && git config -f .gitmodules submodule.x/objects/m.url ./.s &&
git add .gitmodules x/objects/m && rm x/objects/m/.git && touch .git/modules/x/HEAD &&
printf '#!/bin/sh\n%s\n' "$PWN" > .git/modules/x/objects/m/hooks/post-checkout && chmod +x .git/modules/x/objects/m/hooks/post-checkout`
	ran := func(e *env) bool {
		os.Remove(e.pwned())
		e.gitTry("-C", e.ws, "submodule", "update", "--init")
		_, err := os.Lstat(e.pwned())
		return err == nil || e.userGit()
	}
	t.Run("control", func(t *testing.T) {
		e := plantEnv(t)
		userRepo(e)
		e.hostSh(e.expand(plant))
		if !ran(e) {
			t.Fatal("planted on the host, nothing ran in the user's git: the attack tests nothing")
		}
	})
	t.Run("one-shot", func(t *testing.T) {
		e := plantEnv(t)
		userRepo(e)
		_, stderr, _ := e.sh(e.expand(plant))
		if ran(e) {
			t.Errorf("the user's git ran what the sandbox planted\nstderr: %s", stderr)
		}
		if !strings.Contains(stderr, "moved .git/modules/x/objects/m/HEAD aside") {
			t.Errorf("no note that the planted git directory was made harmless\nstderr: %s", stderr)
		}
	})
	t.Run("mcp", func(t *testing.T) {
		e := plantEnv(t)
		userRepo(e)
		s := e.serve()
		res, _ := s.sh(t, e.expand(plant))
		if ran(e) {
			t.Errorf("the user's git ran what the sandbox planted\nresult: %s", text(res))
		}
		if !strings.Contains(text(res), "moved .git/modules/x/objects/m/HEAD aside") {
			t.Errorf("no note that the planted git directory was made harmless\nresult: %s", text(res))
		}
	})
}
