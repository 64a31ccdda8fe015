package e2e

import (
	"os"
	"strings"
	"testing"
)

// indexPlant is one call's script that adds an entry to the workspace's
// index under a placeholder name as long as name, then renames it to name
// with the attack binary: a path git never adds itself. content is a
// printf format without conversions.
func indexPlant(name, content string, mode string) string {
	ph := ".zz" + strings.Repeat("z", len(name)-3)
	return `h=$(printf '` + content + `' | git hash-object -w --stdin) && git update-index --add --cacheinfo "` + mode + `,$h,` + ph + `" && ./attack index-rename .git/index ` + ph + ` '` + name + `'`
}

// The index is no inert file: a name in it that git would never add is a
// path the user's own git writes (git checkout -- .) or reads and hashes
// into the objects (git add -A) wherever it leads. Each planting works on
// the host; through the sandbox, one-shot and over MCP, the call's end
// moves the index aside and makes a new one from HEAD, so the user's git
// writes and reads nothing planted, and the next commit deletes nothing.
func TestEscapeGitPlantedIndex(t *testing.T) {
	for _, tt := range []struct {
		name  string
		plant func(e *env) string
		// user runs the user's git and reports whether the planting
		// reached outside.
		user func(e *env) bool
	}{
		{name: "a hook the user's checkout writes",
			plant: func(e *env) string {
				return indexPlant(".git/hooks/pre-commit", `#!/bin/sh\n`+e.expand("$PWN")+`\n`, "100755")
			},
			user: func(e *env) bool {
				os.Remove(e.pwned())
				e.gitTry("checkout", "--", ".")
				e.gitTry("-c", "user.name=U", "-c", "user.email=u@example.com", "commit", "-q", "--allow-empty", "-m", "user")
				_, err := os.Lstat(e.pwned())
				return err == nil
			}},
		{name: "a file above the work tree the user's checkout writes",
			plant: func(e *env) string { return indexPlant("../PWNED", `planted\n`, "100644") },
			user: func(e *env) bool {
				os.Remove(e.pwned())
				e.gitTry("checkout", "--", ".")
				_, err := os.Lstat(e.pwned())
				return err == nil
			}},
		{name: "a hidden file the user's git add copies in",
			plant: func(e *env) string { return indexPlant("../notes.txt", `x\n`, "100644") },
			user: func(e *env) bool {
				e.gitTry("add", "-A")
				out, _ := e.gitTry("cat-file", "--batch-all-objects", "--batch")
				return strings.Contains(out, secretValue)
			}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Run("control", func(t *testing.T) {
				e := plantEnv(t)
				e.gitRepo()
				e.attackPath()
				e.hostSh(tt.plant(e))
				if !tt.user(e) {
					t.Fatal("planted on the host, the user's git did not reach outside: the attack tests nothing")
				}
			})
			t.Run("one-shot", func(t *testing.T) {
				e := plantEnv(t)
				e.gitRepo()
				e.attackPath()
				_, stderr, code := e.sh(tt.plant(e))
				if code != 0 {
					t.Fatalf("the planting failed inside (exit %d): %s", code, stderr)
				}
				if !strings.Contains(stderr, "moved .git/index aside") || !strings.Contains(stderr, "the sandbox made a new index from HEAD") {
					t.Errorf("no note of the index moved aside: %q", stderr)
				}
				if out, _ := e.gitTry("status", "--porcelain", "--untracked-files=no"); out != "" {
					t.Errorf("after the new index, git status shows %q", out)
				}
				if tt.user(e) {
					t.Errorf("the user's git reached outside\nstderr: %q", stderr)
				}
			})
			t.Run("mcp", func(t *testing.T) {
				e := plantEnv(t)
				e.gitRepo()
				e.attackPath()
				s := e.serve()
				res, out := s.sh(t, tt.plant(e))
				if out.ExitCode != 0 {
					t.Fatalf("the planting failed inside: %s", text(res))
				}
				if !strings.Contains(text(res), "moved .git/index aside") {
					t.Errorf("no note of the index moved aside: %s", text(res))
				}
				if tt.user(e) {
					t.Errorf("the user's git reached outside\nresult: %s", text(res))
				}
				// Honest use goes on: a commit in the next call is judged
				// harmless, and the server answers.
				if res, out := s.sh(t, "echo more >> README && git add README && git commit -qm more && git status --porcelain --untracked-files=no"); out.ExitCode != 0 || out.Stdout != "" || strings.Contains(text(res), "moved") {
					t.Errorf("an honest commit after it: %s", text(res))
				}
			})
		})
	}
}

// An index that git reads one way in order and another with threads: for
// a user whose repository reads it with threads (index.threads, as scalar
// sets it), its hidden entries are a hook the user's checkout writes.
// Control on the host; one-shot and over MCP, the call's end moves it
// aside.
func TestEscapeGitIndexReadWithThreads(t *testing.T) {
	const plant = `h=$(printf '#!/bin/sh\n%s\n' "$PWN" | git hash-object -w --stdin) && T=.git/nsb-t && mkdir -p $T &&
GIT_INDEX_FILE=$T/benign git read-tree HEAD && GIT_INDEX_FILE=$T/benign git update-index --add --cacheinfo 100644,$h,zzzzzzzzzzzzzzzzzzzzz &&
GIT_INDEX_FILE=$T/hostile git read-tree HEAD && GIT_INDEX_FILE=$T/hostile git update-index --add --chmod=+x --cacheinfo 100755,$h,.zzz/zzzzz/pre-commit &&
./attack index-rename $T/hostile .zzz/zzzzz/pre-commit .git/hooks/pre-commit && ./attack index-splice $T/benign $T/hostile .git/index && rm -r $T`
	setup := func(t *testing.T) *env {
		e := plantEnv(t)
		e.gitRepo()
		e.git("config", "index.threads", "4")
		e.attackPath()
		return e
	}
	user := func(e *env) bool {
		os.Remove(e.pwned())
		e.gitTry("checkout", "--", ".")
		e.gitTry("-c", "user.name=U", "-c", "user.email=u@example.com", "commit", "-q", "--allow-empty", "-m", "user")
		_, err := os.Lstat(e.pwned())
		return err == nil
	}
	t.Run("control", func(t *testing.T) {
		e := setup(t)
		e.hostSh(e.expand(plant))
		if out, _ := e.gitTry("-c", "index.threads=1", "ls-files"); strings.Contains(out, ".git/hooks") {
			t.Fatalf("read in order, git lists %q", out)
		}
		if !user(e) {
			t.Fatal("planted on the host, the user's git ran nothing: the attack tests nothing")
		}
	})
	t.Run("one-shot", func(t *testing.T) {
		e := setup(t)
		_, stderr, code := e.sh(e.expand(plant))
		if code != 0 {
			t.Fatalf("the planting failed inside (exit %d): %s", code, stderr)
		}
		if !strings.Contains(stderr, "moved .git/index aside") {
			t.Errorf("no note of the index moved aside: %q", stderr)
		}
		if user(e) {
			t.Errorf("the user's git ran what the sandbox planted\nstderr: %q", stderr)
		}
	})
	t.Run("mcp", func(t *testing.T) {
		e := setup(t)
		s := e.serve()
		res, out := s.sh(t, e.expand(plant))
		if out.ExitCode != 0 {
			t.Fatalf("the planting failed inside: %s", text(res))
		}
		if !strings.Contains(text(res), "moved .git/index aside") {
			t.Errorf("no note of the index moved aside: %s", text(res))
		}
		if user(e) {
			t.Errorf("the user's git ran what the sandbox planted\nresult: %s", text(res))
		}
	})
}
