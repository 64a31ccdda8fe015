package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A --writable grant inside the workspace (husky's .husky, as the README
// suggests) covers what is in it, not a repository a command makes
// elsewhere in the workspace whose git directory and config lie in the
// grant: the user's git obeys that one where its entry is. Control on the
// host, then one-shot and over MCP.
func TestEscapeGitThroughWritableGrant(t *testing.T) {
	const plant = `git init -q --bare .husky/_/cache.git && git -C .husky/_/cache.git config core.bare false && git -C .husky/_/cache.git config core.fsmonitor "$PWN" && mkdir -p src/lib && printf 'gitdir: ../../.husky/_/cache.git\n' > src/lib/.git`
	setup := func(t *testing.T) (*env, []string) {
		e := plantEnv(t)
		e.gitRepo()
		e.git("config", "core.hooksPath", ".husky/_")
		if err := os.MkdirAll(filepath.Join(e.ws, ".husky/_"), 0o755); err != nil {
			t.Fatal(err)
		}
		e.own(filepath.Join(e.ws, ".husky"))
		e.own(filepath.Join(e.ws, ".husky/_"))
		return e, []string{"--writable", filepath.Join(e.ws, ".husky")}
	}
	t.Run("control", func(t *testing.T) {
		e, _ := setup(t)
		e.hostSh(e.expand(plant))
		if !e.userGit("src/lib") {
			t.Fatal("planted on the host, nothing ran in the user's git: the attack tests nothing")
		}
	})
	t.Run("one-shot", func(t *testing.T) {
		e, flags := setup(t)
		_, stderr, _ := e.run(flags, "sh", "-c", e.expand(plant))
		if !strings.Contains(stderr, "moved src/lib/.git aside") {
			t.Errorf("no note of the planted repository moved aside: %q", stderr)
		}
		if e.userGit("src/lib") {
			t.Errorf("the user's git ran what the sandbox planted\nstderr: %q", stderr)
		}
	})
	t.Run("mcp", func(t *testing.T) {
		e, flags := setup(t)
		s := e.serve(flags...)
		// The user's grant holds: husky's hooks written there stay.
		if res, out := s.sh(t, `printf '#!/bin/sh\nexit 0\n' > .husky/_/pre-commit && chmod +x .husky/_/pre-commit`); out.ExitCode != 0 || strings.Contains(text(res), "moved") {
			t.Fatalf("writing a hook in the grant: %s", text(res))
		}
		res, _ := s.sh(t, e.expand(plant))
		if !strings.Contains(text(res), "moved src/lib/.git aside") {
			t.Errorf("no note of the planted repository moved aside: %s", text(res))
		}
		if e.userGit("src/lib") {
			t.Errorf("the user's git ran what the sandbox planted\nresult: %s", text(res))
		}
		if _, err := os.Stat(filepath.Join(e.ws, ".husky/_/pre-commit")); err != nil {
			t.Errorf("the user's husky hook is gone: %v", err)
		}
	})
}
