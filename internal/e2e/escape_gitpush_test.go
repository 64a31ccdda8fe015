package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A clone of a repository the user granted read-only, made in a call,
// whose config changes what the user's plain git push there writes (red
// team round 7, finding 7): remote.origin.mirror deletes every ref the
// clone lacks, a push refspec deletes what it names. The user works in the
// clone and pushes; their branches must stay. The clone is moved aside when
// the call ends. A control makes the same clone on the host and sees the
// push delete the branch.
func TestEscapeGitPushChangingKeys(t *testing.T) {
	for _, tt := range []struct{ name, set string }{
		{"remote.origin.mirror", `git config remote.origin.mirror true`},
		{"remote.origin.push", `git config remote.origin.push :refs/heads/release-1`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			setup := func(t *testing.T) (*env, string, string) {
				e := plantEnv(t)
				e.gitRepo()
				other := filepath.Join(e.home, "other.git")
				e.hostSh(`git init -q --bare "` + other + `" && git push -q "` + other + `" HEAD:refs/heads/master HEAD:refs/heads/release-1`)
				e.own(other)
				if _, err := e.gitTry("--git-dir", other, "rev-parse", "-q", "--verify", "refs/heads/release-1"); err != nil {
					t.Fatalf("the user's repository has no release-1: %v", err)
				}
				return e, other, `git clone -q "` + other + `" vendor/other && cd vendor/other && ` + tt.set
			}
			// The user's push from the clone, and whether release-1 is
			// gone from their repository.
			harmed := func(e *env, other string) bool {
				e.gitTry("-C", filepath.Join(e.ws, "vendor/other"), "push", "-q")
				_, err := e.gitTry("--git-dir", other, "rev-parse", "-q", "--verify", "refs/heads/release-1")
				return err != nil
			}
			t.Run("control", func(t *testing.T) {
				e, other, script := setup(t)
				e.hostSh(script)
				if !harmed(e, other) {
					t.Fatal("made on the host, the clone's push did not delete the user's branch: the attack tests nothing")
				}
			})
			t.Run("one-shot", func(t *testing.T) {
				e, other, script := setup(t)
				_, stderr, _ := e.run([]string{"--read-only", other}, "sh", "-c", script)
				if harmed(e, other) {
					t.Errorf("the user's push from the clone deleted their branch\nstderr: %s", stderr)
				}
				if want := "moved vendor/other/.git aside"; !strings.Contains(stderr, want) {
					t.Errorf("stderr %q, want %q", stderr, want)
				}
			})
			t.Run("mcp", func(t *testing.T) {
				e, other, script := setup(t)
				res, _ := e.serve("--read-only", other).sh(t, script)
				if harmed(e, other) {
					t.Errorf("the user's push from the clone deleted their branch\nresult: %s", text(res))
				}
				if want := "moved vendor/other/.git aside"; !strings.Contains(text(res), want) {
					t.Errorf("result %q, want %q", text(res), want)
				}
				if _, err := os.Lstat(filepath.Join(e.ws, "vendor/other/.git")); err == nil {
					t.Error("the clone's .git is still there")
				}
			})
		})
	}
}
