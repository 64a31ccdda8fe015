package gitguard

import (
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// The watched tree must always agree with a fresh walk: random changes of
// every kind the scan cares about (directories made, removed, renamed in
// and out, .git entries of each type, bare-repository markers, object
// stores with repositories hidden in them), then a refresh, then the same
// candidates as walking from scratch, and as a plain walk that leaves
// nothing out.
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
			names := []string{"a", "b", "c", ".git", "HEAD", "objects", "refs", "commondir", "hidden", "sub", "lfs", "annex", "ab"}
			name := func() string { return names[rng.Intn(len(names))] }
			for step := 0; step < 300; step++ {
				p := filepath.Join(pick(), name())
				switch rng.Intn(11) {
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
				case 9:
					// A repository in an object store, HEAD beside it
					// before or after.
					os.WriteFile(filepath.Join(p, "HEAD"), nil, 0o644)
					os.MkdirAll(filepath.Join(p, []string{"objects", "lfs", "annex"}[rng.Intn(3)], "ab", name(), ".git"), 0o755)
				case 10:
					os.WriteFile(filepath.Join(pick(), "HEAD"), nil, 0o644)
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
				if diff := cmp.Diff(plainCandidates(t, root, skip), want, cmp.AllowUnexported(candidate{}), cmpopts.EquateEmpty()); diff != "" {
					t.Fatalf("step %d: the walk leaves out what a plain walk finds (-plain +walk):\n%s", step, diff)
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

// plainCandidates finds the candidates with filepath.WalkDir, which enters
// every directory but the hidden ones: what the scan must find.
func plainCandidates(t *testing.T, root string, skip func(string) bool) []candidate {
	t.Helper()
	flags := map[string]uint8{}
	var out []candidate
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if !d.IsDir() {
			return nil
		}
		if skip(p) {
			return filepath.SkipDir
		}
		ents, err := os.ReadDir(p)
		if err != nil {
			return nil
		}
		var f uint8
		for _, e := range ents {
			f |= markerOf(e.Name())
		}
		flags[p] = f
		var pf uint8
		if p != root {
			pf = flags[filepath.Dir(p)]
		}
		out = append(out, candidatesOf(p, f, pf)...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sortCandidates(out)
	return out
}

// BenchmarkTreeLooseObjects is the cost of watching a repository with
// 20,000 loose objects: one build, then a refresh after git packs them
// all (and removes the fan-out directories) and another after they are
// unpacked again (go test -run '^$' -bench
// TreeLoose).
func BenchmarkTreeLooseObjects(b *testing.B) {
	root := looseRepo(b, 20000)
	skip := func(string) bool { return false }
	git := func(script string) {
		cmd := exec.Command("sh", "-c", script)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+root)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%s: %v\n%s", script, err, out)
		}
	}
	pack := "git cat-file --batch-all-objects --batch-check='%(objectname)' | git pack-objects -q .git/objects/pack/pack >/dev/null"
	git(pack + " && cat .git/objects/pack/*.pack > ../p.pack && rm -f .git/objects/pack/*")
	var build, packed, unpacked time.Duration
	for b.Loop() {
		began := time.Now()
		tr, err := newTree([]string{root}, skip)
		if err != nil {
			b.Fatal(err)
		}
		build += time.Since(began)
		b.StopTimer()
		git(pack + " && git prune-packed")
		b.StartTimer()
		began = time.Now()
		if err := tr.refresh(); err != nil {
			b.Fatal(err)
		}
		packed += time.Since(began)
		b.StopTimer()
		git("git unpack-objects -q < ../p.pack && rm -f .git/objects/pack/*")
		b.StartTimer()
		began = time.Now()
		if err := tr.refresh(); err != nil {
			b.Fatal(err)
		}
		unpacked += time.Since(began)
		tr.close()
	}
	n := time.Duration(b.N)
	b.ReportMetric(float64(build/n)/1e6, "build-ms")
	b.ReportMetric(float64(packed/n)/1e6, "refresh-packed-ms")
	b.ReportMetric(float64(unpacked/n)/1e6, "refresh-unpacked-ms")
}

// TestTreeMissesNothingMadeWhileReading: a directory made in one while the
// walk reads it (a command's, while another call's refresh runs) is
// listed, or an event: watched before it is read. Watched after, it was
// neither, and what was below it was never a candidate.
func TestTreeMissesNothingMadeWhileReading(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "d")
	os.Mkdir(dir, 0o755)
	afterRead = func(path string) {
		if path == dir {
			afterRead = nil
			if err := os.MkdirAll(filepath.Join(dir, "late/sub/.git"), 0o755); err != nil {
				t.Error(err)
			}
		}
	}
	defer func() { afterRead = nil }()
	tr, err := newTree([]string{root}, func(string) bool { return false })
	if err != nil {
		t.Fatal(err)
	}
	defer tr.close()
	time.Sleep(50 * time.Millisecond) // the events reach the reader
	if err := tr.refresh(); err != nil {
		t.Fatal(err)
	}
	want := candidate{entry: filepath.Join(dir, "late/sub/.git")}
	for _, c := range tr.candidates() {
		if c == want {
			return
		}
	}
	t.Errorf("%s made while its parent was read is no candidate: %v", want.entry, tr.candidates())
}
