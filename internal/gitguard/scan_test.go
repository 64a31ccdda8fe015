package gitguard

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// looseRepo makes a repository holding n loose objects, as a build or a
// fetch without gc leaves it: every fan-out directory, files only.
func looseRepo(tb testing.TB, n int) string {
	tb.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		tb.Skip("needs git on PATH")
	}
	dir := tb.TempDir()
	var in strings.Builder
	for i := 0; i < n; i++ {
		s := fmt.Sprintf("%d\n", i)
		fmt.Fprintf(&in, "blob\ndata %d\n%s\n", len(s), s)
	}
	run := func(stdin, script string) {
		cmd := exec.Command("sh", "-c", script)
		cmd.Dir = dir
		cmd.Stdin = strings.NewReader(stdin)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			tb.Fatalf("%s: %v\n%s", script, err, out)
		}
	}
	run("", "git init -q src && git init -q repo")
	run(in.String(), "git -C src fast-import --quiet")
	run("", "cat src/.git/objects/pack/*.pack | git -C repo unpack-objects -q && rm -rf src")
	return filepath.Join(dir, "repo")
}

// BenchmarkWalkLooseObjects is the cost of a full walk of a repository
// with 20,000 loose objects (go test -run '^$' -bench WalkLoose).
func BenchmarkWalkLooseObjects(b *testing.B) {
	root := looseRepo(b, 20000)
	skip := func(string) bool { return false }
	for b.Loop() {
		if _, err := walkCandidates([]string{root}, skip); err != nil {
			b.Fatal(err)
		}
	}
}

// walkCandidates walks roots and returns every candidate, sorted.
func walkCandidates(roots []string, skip func(string) bool) ([]candidate, error) {
	var out []candidate
	w := &walker{skip: skip, visit: func(path string, _ int, st dirState, parentFlags uint8) error {
		out = append(out, candidatesOf(path, st.flags, parentFlags)...)
		return nil
	}}
	for _, r := range roots {
		if err := w.walk(r, 0); err != nil {
			return nil, err
		}
	}
	sortCandidates(out)
	return out, nil
}
