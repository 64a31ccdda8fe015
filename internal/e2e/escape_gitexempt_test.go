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

// A repository a call makes in a --writable path inside the user's
// repository, entered by the user's git status as a submodule through a
// gitlink the call staged (from the eleventh git red-team round): judged
// as any repository a call makes, its planted config moved aside. The
// control sees the user's status run it.
func TestEscapeGitExemptSubmodule(t *testing.T) {
	const attack = `git init -q build/_x && git -C build/_x config core.fsmonitor "$PWN" &&
git -C build/_x -c user.name=a -c user.email=a@example.com commit -q --allow-empty -m x && git add -f build/_x 2>/dev/null`
	setup := func(e *env) []string {
		e.gitRepo()
		os.MkdirAll(filepath.Join(e.ws, "build"), 0o755)
		e.own(filepath.Join(e.ws, "build"))
		return []string{"--writable", filepath.Join(e.ws, "build")}
	}
	ran := func(e *env) bool {
		os.Remove(e.pwned())
		e.gitTry("status", "--short")
		_, err := os.Lstat(e.pwned())
		return err == nil
	}
	t.Run("control", func(t *testing.T) {
		e := plantEnv(t)
		setup(e)
		e.hostSh(e.expand(attack))
		if !ran(e) {
			t.Fatal("planted on the host, the user's git status ran nothing: the attack tests nothing")
		}
	})
	t.Run("one-shot", func(t *testing.T) {
		e := plantEnv(t)
		flags := setup(e)
		_, stderr, _ := e.run(flags, "sh", "-c", e.expand(attack))
		if ran(e) {
			t.Errorf("the user's git status ran what the call planted\nstderr: %s", stderr)
		}
		if !strings.Contains(stderr, "moved build/_x/.git aside") {
			t.Errorf("no note of build/_x/.git moved aside:\n%s", stderr)
		}
	})
}
