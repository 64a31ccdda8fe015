package e2e

import (
	"os"
	"path/filepath"
	"testing"
)

// Plantings from the second red-team run that held, each with its control
// (runPlantAttack): the fixes of the first run, attacked again.
var round2PlantAttacks = []plantAttack{
	{name: "every fixed quarantine name taken in advance", setup: userRepo,
		steps: []string{`git init -q q && git -C q commit -q --allow-empty -m s && git -C q config core.fsmonitor "$PWN" &&
touch q/.git.quarantined-by-nanosandbox && i=1 && while [ $i -lt 100 ]; do touch q/.git.quarantined-by-nanosandbox-$i; i=$((i+1)); done && git add q`},
		dirs: []string{"q"}},
	{name: "the planted repository's parent made read-only",
		setup: func(e *env) {
			userRepo(e)
			// Writable again for the temporary directory's removal, which
			// as a user other than root could not enter it.
			e.t.Cleanup(func() { os.Chmod(filepath.Join(e.ws, "d"), 0o755) })
		},
		steps: []string{`mkdir d && git init -q d/in && git -C d/in commit -q --allow-empty -m s && git -C d/in config core.fsmonitor "$PWN" && chmod 0500 d`},
		dirs:  []string{"d/in"}},
	{name: "the hooks path of a repository holding the workspace, absent, made through a symlink",
		setup: func(e *env) {
			for _, args := range [][]string{{"init", "-q", e.home}, {"-C", e.home, "config", "core.hooksPath", "proj/.husky/_"}} {
				if out, err := e.gitTry(args...); err != nil {
					e.t.Fatalf("git %v: %v\n%s", args, err, out)
				}
			}
		},
		steps: []string{`mkdir -p x/_ && printf '#!/bin/sh\n%s\n' "$PWN" > x/_/pre-commit && chmod +x x/_/pre-commit && ln -s x .husky`},
		dirs:  []string{".."}},
	{name: "a new repository at the top of a workspace a repository holds",
		setup: func(e *env) {
			if out, err := e.gitTry("init", "-q", e.home); err != nil {
				e.t.Fatalf("git init: %v\n%s", err, out)
			}
		},
		steps: []string{`git init -q . && git commit -q --allow-empty -m s && git config core.fsmonitor "$PWN"`}},
}

func TestEscapeGitRound2(t *testing.T) {
	for _, tt := range round2PlantAttacks {
		t.Run(tt.name, func(t *testing.T) { runPlantAttack(t, tt) })
	}
}
