package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A repository a call makes whose remote leads to another repository of
// the user's, outside the workspace, spelled so that only git's own
// reading finds it (from the tenth git red-team round): a file URL with a
// host, which git passes over (file://localhost/PATH is /PATH), and a
// remote with no url, which git takes by its name (a path) for git fetch
// --all. The user's push would write there and run its hooks; the fetch
// would copy it into the workspace, where the next call reads it. Each
// is moved aside, in the one-shot form and in a server; the control
// plants the same on the host.
func TestEscapeGitRemoteSpellings(t *testing.T) {
	for _, tt := range []struct {
		name   string
		attack string   // the call's, in the workspace
		user   []string // the user's git, in ws/sub
		push   bool     // the effect is the outside hook's marker, not the secret copied in
	}{
		{"a file URL with a host, pushed to", `git init -q sub && git -C sub commit -q --allow-empty -m s && git -C sub remote add origin "file://localhost$OTHER.git"`,
			[]string{"push", "-q", "origin", "HEAD:refs/heads/planted"}, true},
		{"a file URL with another host, fetched from", `git init -q sub && git -C sub commit -q --allow-empty -m s && git -C sub remote add origin "file://example.com$OTHER" && git -C sub config remote.origin.fetch '+refs/heads/*:refs/remotes/origin/*'`,
			[]string{"fetch", "-q", "origin"}, false},
		{"a relative URL taken from the work tree core.worktree moves, fetched from", `git init -q sub && git -C sub commit -q --allow-empty -m s && git -C sub config core.worktree ../.. && git -C sub remote add origin ../other`,
			[]string{"fetch", "-q", "origin"}, false},
		{"a URL naming a .git file that leads outside, fetched from", `git init -q sub && git -C sub commit -q --allow-empty -m s && printf 'gitdir: %s/.git\n' "$OTHER" > peer && git -C sub remote add origin ../peer`,
			[]string{"fetch", "-q", "origin"}, false},
		{"a URL naming a .git file that leads outside, pushed to", `git init -q sub && git -C sub commit -q --allow-empty -m s && printf 'gitdir: %s.git\n' "$OTHER" > peer && git -C sub remote add origin ../peer`,
			[]string{"push", "-q", "origin", "HEAD:refs/heads/planted"}, true},
		{"a remote that is only a name, fetched from", `git init -q sub && git -C sub commit -q --allow-empty -m s && git -C sub config remote.../../other.fetch '+refs/heads/*:refs/remotes/leak/*'`,
			[]string{"fetch", "-q", "--all"}, false},
	} {
		// setup makes the user's outside repositories: $OTHER with a
		// secret commit, and $OTHER.git, bare, whose post-receive hook
		// leaves the marker.
		setup := func(e *env) string {
			other := filepath.Join(e.home, "other")
			e.git("init", "-q", other)
			e.git("-C", other, "-c", "user.name=U", "-c", "user.email=u@example.com", "commit", "-q", "--allow-empty", "-m", "the user's secret")
			e.git("init", "-q", "--bare", other+".git")
			e.write(filepath.Join(other+".git", "hooks", "post-receive"), "#!/bin/sh\ntouch "+e.pwned()+"\n", 0o755)
			return strings.TrimSpace(e.git("-C", other, "rev-parse", "HEAD"))
		}
		got := func(e *env, secret string) bool {
			t.Helper()
			os.Remove(e.pwned())
			sub := filepath.Join(e.ws, "sub")
			e.gitTry(append([]string{"-C", sub, "-c", "user.name=U", "-c", "user.email=u@example.com"}, tt.user...)...)
			if tt.push {
				_, err := os.Lstat(e.pwned())
				return err == nil
			}
			_, err := e.gitTry("-C", sub, "cat-file", "-e", secret)
			return err == nil
		}
		t.Run(tt.name, func(t *testing.T) {
			t.Run("control", func(t *testing.T) {
				e := plantEnv(t)
				secret := setup(e)
				e.hostSh(e.expand(tt.attack))
				if !got(e, secret) {
					t.Fatal("planted on the host, the user's git did not reach the outside repository: the attack tests nothing")
				}
			})
			t.Run("one-shot", func(t *testing.T) {
				e := plantEnv(t)
				secret := setup(e)
				_, stderr, _ := e.sh(e.expand(tt.attack))
				if got(e, secret) {
					t.Errorf("the user's git reached the outside repository\nstderr: %s", stderr)
				}
				if !strings.Contains(stderr, "moved sub/.git aside") {
					t.Errorf("no note of sub/.git moved aside:\n%s", stderr)
				}
			})
			t.Run("server", func(t *testing.T) {
				e := plantEnv(t)
				secret := setup(e)
				s := e.serve()
				res, _ := s.sh(t, e.expand(tt.attack))
				if got(e, secret) {
					t.Errorf("the user's git reached the outside repository\n%s", text(res))
				}
				if !strings.Contains(text(res), "moved sub/.git aside") {
					t.Errorf("no note of sub/.git moved aside:\n%s", text(res))
				}
			})
		})
	}
}
