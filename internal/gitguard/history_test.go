package gitguard

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Replace refs, grafts, shallow and rr-cache are judged in a trusted
// repository only: a repository made in a call may hold them.
func TestHistoryInNewRepository(t *testing.T) {
	f := newFixture(t)
	f.start()
	notes := f.call(`git init -q && git commit -q --allow-empty -m one && git commit -q --allow-empty -m two &&
git replace HEAD HEAD~1 && git rev-parse HEAD > .git/shallow && mkdir -p .git/rr-cache/` + strings.Repeat("a", 40))
	if len(notes) != 0 {
		t.Errorf("notes %q", notes)
	}
}

// A symbolic replace ref, or one made beside a packed one, is undone too;
// what the call deleted stays deleted.
func TestReplaceUndo(t *testing.T) {
	a, b, c := strings.Repeat("a", 40), strings.Repeat("b", 40), strings.Repeat("c", 40)
	prev := element{content: []byte("refs/replace/" + a + " " + a + "\nrefs/replace/" + b + " " + b)}
	now := element{content: []byte("refs/replace/" + a + " " + b + "\nrefs/replace/" + c + " ref: refs/heads/x")}
	names, lines := replaceUndo(now, prev)
	if got, want := strings.Join(names, ","), "refs/replace/"+a+",refs/replace/"+c; got != want {
		t.Errorf("names %q, want %q", got, want)
	}
	if got, want := strings.Join(lines, "\n"), "update refs/replace/"+a+" "+a+"\ndelete refs/replace/"+c; got != want {
		t.Errorf("lines %q, want %q", got, want)
	}
}

// A resolution added beside the user's, and one of the user's rewritten in
// place, go aside; the user's others stay.
func TestRRCacheChangedInPlace(t *testing.T) {
	f := newFixture(t)
	keep, add, edit := strings.Repeat("1", 40), strings.Repeat("2", 40), strings.Repeat("3", 40)
	f.sh(`git init -q && for d in ` + keep + ` ` + edit + `; do mkdir -p .git/rr-cache/$d && echo a > .git/rr-cache/$d/preimage && echo b > .git/rr-cache/$d/postimage; done`)
	f.start()
	notes := f.call(`mkdir .git/rr-cache/` + add + ` && echo p > .git/rr-cache/` + add + `/postimage && echo PLANTED > .git/rr-cache/` + edit + `/postimage`)
	if len(notes) != 2 {
		t.Errorf("notes %q, want two resolutions moved aside", notes)
	}
	for name, want := range map[string]bool{keep: true, add: false, edit: false} {
		_, err := os.Lstat(filepath.Join(f.root, ".git/rr-cache", name))
		if (err == nil) != want {
			t.Errorf("rr-cache/%s there: %v, want %v", name, err == nil, want)
		}
	}
	if notes := f.call(""); len(notes) != 0 {
		t.Errorf("the next call: notes %q", notes)
	}
}

// BenchmarkBeginEnd is one call's cost for an ordinary repository: one
// with a packed-refs file, as git gc leaves it, and no replace refs.
func BenchmarkBeginEnd(b *testing.B) {
	dir := b.TempDir()
	if err := exec.Command("sh", "-c", `cd `+dir+` && git init -q && git -c user.name=a -c user.email=a@b commit -q --allow-empty -m x &&
for i in $(seq 200); do git tag t$i; done && git pack-refs --all`).Run(); err != nil {
		b.Skip("needs git")
	}
	dir, _ = filepath.EvalSymlinks(dir)
	git, _ := exec.LookPath("git")
	g, err := New(Config{Roots: []Root{{Host: dir}}, Git: git, Home: b.TempDir(), Log: func(string) {}})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c, err := g.Begin()
		if err != nil {
			b.Fatal(err)
		}
		if notes := c.End(); len(notes) != 0 {
			b.Fatal(notes)
		}
	}
}

// BenchmarkHistoryElements is what every resolve adds for an ordinary
// repository: its replace refs (packed-refs from the cache), grafts,
// shallow and rr-cache, none of them there.
func BenchmarkHistoryElements(b *testing.B) {
	dir := b.TempDir()
	if err := exec.Command("sh", "-c", `cd `+dir+` && git init -q && git -c user.name=a -c user.email=a@b commit -q --allow-empty -m x &&
for i in $(seq 200); do git tag t$i; done && git pack-refs --all`).Run(); err != nil {
		b.Skip("needs git")
	}
	common := filepath.Join(dir, ".git")
	r := resolver{packed: map[string]cachedPacked{}, used: map[string]bool{}}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if e := r.replaceRefs(common); e.id.exists() || e.odd != "" {
			b.Fatalf("%+v", e)
		}
		historyFile(filepath.Join(common, "info", "grafts"))
		historyFile(filepath.Join(common, "shallow"))
		rrCache(filepath.Join(common, "rr-cache"))
	}
}
