package gitguard

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// The watched tree must always agree with a fresh walk: random changes of
// every kind the scan cares about (directories made, removed, renamed in
// and out, .git entries of each type, bare-repository markers), then a
// refresh, then the same candidates as walking from scratch.
func TestTreeAgreesWithWalk(t *testing.T) {
	testFinderAgreesWithWalk(t, func(roots []string, skip func(string) bool) (finder, error) { return newTree(roots, skip) })
}

// The same for the finder that polls directories' times, which trusts a
// directory's times after a second: here at once, so that the test relies
// on the times alone.
func TestPollAgreesWithWalk(t *testing.T) {
	old := settle
	settle = 0
	defer func() { settle = old }()
	testFinderAgreesWithWalk(t, func(roots []string, skip func(string) bool) (finder, error) {
		p := &pollFinder{roots: roots, skip: skip}
		return p, p.refresh()
	})
}

func testFinderAgreesWithWalk(t *testing.T, newFinder func([]string, func(string) bool) (finder, error)) {
	for seed := int64(1); seed <= 12; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			base := t.TempDir()
			root := filepath.Join(base, "root")
			outside := filepath.Join(base, "outside")
			os.MkdirAll(root, 0o755)
			os.MkdirAll(outside, 0o755)
			skip := func(p string) bool { return within(p, filepath.Join(root, "hidden")) }
			tr, err := newFinder([]string{root}, skip)
			if err != nil {
				t.Fatal(err)
			}
			defer tr.close()
			dirs := func() []string {
				var out []string
				filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
					if err == nil && d.IsDir() {
						out = append(out, p)
					}
					return nil
				})
				return out
			}
			pick := func() string { d := dirs(); return d[rng.Intn(len(d))] }
			name := func() string {
				return []string{"a", "b", "c", ".git", "HEAD", "objects", "refs", "commondir", "hidden", "sub"}[rng.Intn(10)]
			}
			for step := 0; step < 300; step++ {
				p := filepath.Join(pick(), name())
				switch rng.Intn(9) {
				case 0, 1:
					os.MkdirAll(filepath.Join(p, name()), 0o755)
				case 2:
					os.WriteFile(p, []byte("gitdir: x\n"), 0o644)
				case 3:
					os.Symlink("..", p)
				case 4:
					if p != root {
						os.RemoveAll(p)
					}
				case 5:
					os.Rename(p, filepath.Join(pick(), name()))
				case 6:
					os.Rename(p, filepath.Join(outside, fmt.Sprint(step)))
				case 7:
					ents, _ := os.ReadDir(outside)
					if len(ents) > 0 {
						os.Rename(filepath.Join(outside, ents[rng.Intn(len(ents))].Name()), p)
					}
				case 8:
					os.Mkdir(p, 0o755)
				}
				if rng.Intn(10) != 0 {
					continue // several changes between refreshes
				}
				if err := tr.refresh(); err != nil {
					t.Fatal(err)
				}
				want, err := walkCandidates([]string{root}, skip)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, tr.candidates(), cmp.AllowUnexported(candidate{}), cmpopts.EquateEmpty()); diff != "" {
					t.Fatalf("step %d: the watched tree disagrees with a walk (-walk +tree):\n%s", step, diff)
				}
			}
		})
	}
}

// An overflowing queue costs a walk, not a candidate.
func TestTreeOverflow(t *testing.T) {
	root := t.TempDir()
	tr, err := newTree([]string{root}, func(string) bool { return false })
	if err != nil {
		t.Fatal(err)
	}
	defer tr.close()
	tr.mu.Lock()
	tr.overflow = true
	tr.mu.Unlock()
	os.MkdirAll(filepath.Join(root, "x/y/.git"), 0o755)
	if err := tr.refresh(); err != nil {
		t.Fatal(err)
	}
	want := []candidate{{entry: filepath.Join(root, "x/y/.git")}}
	if diff := cmp.Diff(want, tr.candidates(), cmp.AllowUnexported(candidate{})); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// Past the watch budget the guard walks instead, and still finds what a
// call plants.
func TestWalkWhenTooManyToWatch(t *testing.T) {
	old := maxWatched
	maxWatched = 30
	defer func() { maxWatched = old }()
	f := newFixture(t)
	f.sh("git init -q && mkdir -p $(seq -f 'd%g' 1 10)")
	g := f.start()
	if _, ok := g.find.(*tree); !ok {
		t.Fatalf("finder %T, want the watched tree while under the budget", g.find)
	}
	notes := f.call(`mkdir -p $(seq -f 'e%g/x' 1 30) && git init -q e7/x/sub && git -C e7/x/sub config core.fsmonitor "$PWN"`)
	if _, ok := g.find.(*pollFinder); !ok {
		t.Errorf("finder %T, want a walk past the budget", g.find)
	}
	if !strings.Contains(strings.Join(notes, "\n"), "moved e7/x/sub/.git aside") || f.userGit("e7/x/sub") {
		t.Errorf("notes %q", notes)
	}
}
