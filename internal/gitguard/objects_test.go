package gitguard

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// huskyRepo is the user's repository: core.hooksPath .husky with a
// tracked, harmless pre-commit hook.
const huskyRepo = `git init -q -b main && mkdir .husky && printf '#!/bin/sh\nexit 0\n' > .husky/pre-commit && chmod +x .husky/pre-commit &&
git config core.hooksPath .husky && echo a > README && git add -A && git commit -qm initial && echo b >> README && git commit -qam second`

// plantedHook is a hook that leaves marker.
func plantedHook(marker string) []byte {
	return []byte("#!/bin/sh\ntouch " + marker + "\n")
}

// looseBytes is a loose blob object of content, as git writes it.
func looseBytes(content []byte) []byte {
	var b bytes.Buffer
	w := zlib.NewWriter(&b)
	fmt.Fprintf(w, "blob %d\x00", len(content))
	w.Write(content)
	w.Close()
	return b.Bytes()
}

// hookOid is the id of HEAD:.husky/pre-commit in repo.
func hookOid(t *testing.T, repo string) string {
	return strings.TrimSpace(gitIn(t, repo, "rev-parse", "HEAD:.husky/pre-commit"))
}

// replaceLoose rewrites the loose object oid of repo in place with a blob
// of content: the file is the user's, so chmod u+w and a write do it.
func replaceLoose(t *testing.T, repo, oid string, content []byte) {
	t.Helper()
	p := filepath.Join(repo, ".git", "objects", oid[:2], oid[2:])
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, looseBytes(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// plantPack adds a pack to repo holding a blob of content, with an index
// that lists it under oid: newer packs are searched first.
func plantPack(t *testing.T, repo, oid string, content []byte) {
	t.Helper()
	scratch := t.TempDir()
	gitIn(t, scratch, "init", "-q")
	if err := os.WriteFile(filepath.Join(scratch, "c"), content, 0o644); err != nil {
		t.Fatal(err)
	}
	real := strings.TrimSpace(gitIn(t, scratch, "hash-object", "-w", "c"))
	shIn(t, scratch, "echo "+real+" | git pack-objects -q p >/dev/null")
	idxs, _ := filepath.Glob(filepath.Join(scratch, "p-*.idx"))
	if len(idxs) != 1 {
		t.Fatalf("pack-objects made %q", idxs)
	}
	idx, err := os.ReadFile(idxs[0])
	if err != nil {
		t.Fatal(err)
	}
	// Version 2, one object: magic and version, 256 fan-out counts, then
	// its name.
	want, _ := hex.DecodeString(oid)
	for i := 0; i < 256; i++ {
		n := uint32(0)
		if i >= int(want[0]) {
			n = 1
		}
		binary.BigEndian.PutUint32(idx[8+4*i:], n)
	}
	copy(idx[8+1024:], want)
	sum := sha1.Sum(idx[:len(idx)-20])
	copy(idx[len(idx)-20:], sum[:])
	base := strings.TrimSuffix(filepath.Base(idxs[0]), ".idx")
	pack, err := os.ReadFile(filepath.Join(scratch, base+".pack"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(repo, ".git", "objects", "pack")
	os.MkdirAll(dir, 0o755)
	if err := os.WriteFile(filepath.Join(dir, base+".pack"), pack, 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, base+".idx"), idx, 0o444); err != nil {
		t.Fatal(err)
	}
}

// plantGraph writes a commit-graph for repo that gives HEAD a tree with
// the planted hook: git takes a commit's tree from it where it walks
// commits (git show, log -p, diff of two revisions).
func plantGraph(t *testing.T, repo string, content []byte) {
	t.Helper()
	// The planted tree is made as git makes one, through an index of
	// its own: nothing in the work tree or the repository's index moves.
	hook := filepath.Join(t.TempDir(), "hook")
	if err := os.WriteFile(hook, content, 0o755); err != nil {
		t.Fatal(err)
	}
	idx := filepath.Join(t.TempDir(), "index")
	tree := strings.TrimSpace(gitIn(t, repo, "hash-object", "-w", hook))
	shIn(t, repo, "GIT_INDEX_FILE="+idx+" git read-tree HEAD && GIT_INDEX_FILE="+idx+" git update-index --cacheinfo 100755,"+tree+",.husky/pre-commit && GIT_INDEX_FILE="+idx+" git write-tree > "+idx+".tree")
	b, err := os.ReadFile(idx + ".tree")
	if err != nil {
		t.Fatal(err)
	}
	tree = strings.TrimSpace(string(b))
	head := strings.TrimSpace(gitIn(t, repo, "rev-parse", "HEAD"))
	gitIn(t, repo, "commit-graph", "write", "--reachable")
	p := filepath.Join(repo, ".git", "objects", "info", "commit-graph")
	b, err = os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	chunk := func(id string) int {
		for i := 8; i+12 <= len(b); i += 12 {
			if string(b[i:i+4]) == id {
				return int(binary.BigEndian.Uint64(b[i+4:]))
			}
		}
		t.Fatalf("no %s chunk", id)
		return 0
	}
	oidl, cdat := chunk("OIDL"), chunk("CDAT")
	h, _ := hex.DecodeString(head)
	fan := chunk("OIDF")
	count := int(binary.BigEndian.Uint32(b[fan+4*255:]))
	for i := 0; i < count; i++ {
		if bytes.Equal(b[oidl+20*i:oidl+20*i+20], h) {
			tr, _ := hex.DecodeString(tree)
			copy(b[cdat+36*i:], tr)
		}
	}
	sum := sha1.Sum(b[:len(b)-20])
	copy(b[len(b)-20:], sum[:])
	os.Chmod(p, 0o644)
	if err := os.WriteFile(p, b, 0o444); err != nil {
		t.Fatal(err)
	}
}

// userCheckout is what the user's git does later: a branch switch, and a
// reset that writes the hook anew, a worktree, and a commit after each. It reports whether the
// planted hook ran.
func (f *fixture) userCheckout() bool {
	f.t.Helper()
	os.Remove(f.marker)
	wt := filepath.Join(f.root, "..", "wt")
	os.RemoveAll(wt)
	for _, args := range [][]string{
		{"-C", f.root, "checkout", "-q", "HEAD~"}, {"-C", f.root, "checkout", "-q", "main"},
		{"-C", f.root, "commit", "-q", "--allow-empty", "-m", "user"},
		{"-C", f.root, "rm", "-q", "--cached", ".husky/pre-commit"}, {"-C", f.root, "reset", "-q", "--hard"},
		{"-C", f.root, "commit", "-q", "--allow-empty", "-m", "user"},
		{"-C", f.root, "worktree", "add", "-q", wt}, {"-C", wt, "commit", "-q", "--allow-empty", "-m", "user"},
	} {
		f.gitRun(args...)
	}
	f.gitRun("-C", f.root, "worktree", "remove", "--force", wt)
	_, err := os.Lstat(f.marker)
	return err == nil
}

func (f *fixture) gitRun(args ...string) {
	cmd := exec.Command(f.git, args...)
	cmd.Env = f.env()
	cmd.Run()
}

// Git does not check an object's hash when it reads it: each substitution
// in the user's repository's object store, made by a call, gives the
// user's checkout the planted hook, which the next commit runs. The
// control does it unguarded and sees it run; guarded, what was written is
// moved aside, with a note, and the user's git runs nothing.
func TestEndMovesAsideSubstitutedObjects(t *testing.T) {
	for _, tt := range []struct {
		name  string
		plant func(f *fixture, oid string)
		// harm reports whether the user's git, run afterwards, ran or
		// showed what was planted (userCheckout, if nil).
		harm func(f *fixture) bool
		note string
		// sha256 makes the repository with SHA-256 object names.
		sha256 bool
	}{
		{name: "a loose object rewritten in place",
			plant: func(f *fixture, oid string) { replaceLoose(f.t, f.root, oid, plantedHook(f.marker)) },
			note:  "is a loose object that does not hold what its name says"},
		{name: "a loose object rewritten in place, SHA-256",
			plant:  func(f *fixture, oid string) { replaceLoose(f.t, f.root, oid, plantedHook(f.marker)) },
			note:   "is a loose object that does not hold what its name says",
			sha256: true},
		{name: "a new pack listing an existing id",
			plant: func(f *fixture, oid string) { plantPack(f.t, f.root, oid, plantedHook(f.marker)) },
			note:  "git verify-pack found"},
		{name: "a commit-graph giving HEAD another tree",
			plant: func(f *fixture, oid string) { plantGraph(f.t, f.root, plantedHook(f.marker)) },
			// git show takes HEAD's tree from the graph: the review shows
			// the planted hook as the commit's.
			harm: func(f *fixture) bool {
				return strings.Contains(gitIn(f.t, f.root, "show", "HEAD"), f.marker)
			},
			note: "git commit-graph verify found"},
	} {
		setup := huskyRepo
		if tt.sha256 {
			setup = strings.Replace(setup, "git init -q -b main", "git init -q -b main --object-format=sha256", 1)
		}
		harm := tt.harm
		if harm == nil {
			harm = (*fixture).userCheckout
		}
		runWalks(t, tt.name, func(t *testing.T, walk bool) {
			ctl := newFixture(t)
			ctl.sh(setup)
			tt.plant(ctl, hookOid(t, ctl.root))
			if !harm(ctl) {
				t.Fatal("control: the planted hook did not run; the attack tests nothing")
			}

			f := newFixture(t)
			f.walk = walk
			f.sh(setup)
			oid := hookOid(t, f.root)
			f.start()
			c, err := f.g.Begin()
			if err != nil {
				t.Fatal(err)
			}
			tt.plant(f, oid)
			notes := c.End()
			if harm(f) {
				t.Errorf("the user's git ran the planted hook; notes: %q", notes)
			}
			if !strings.Contains(strings.Join(notes, "\n"), tt.note) {
				t.Errorf("notes %q, want one containing %q", notes, tt.note)
			}
			if more := f.call(""); len(more) != 0 {
				t.Errorf("the next call noted %q", more)
			}
		})
	}
}

// Honest calls write objects as git does: commits, a gc (new packs, a
// commit-graph, loose objects pruned), a fetch from a repository in the
// workspace, a multi-pack-index. Nothing is noted, and the repository
// stays whole.
func TestEndKeepsHonestObjects(t *testing.T) {
	for _, tt := range []struct{ name, script string }{
		{"a commit", "echo b >> README && git commit -qam b"},
		{"a commit touching an existing blob", "echo a > README2 && git add README2 && git commit -qm c"},
		{"gc", "echo b >> README && git commit -qam b && git gc -q"},
		{"gc twice", "git gc -q && echo c >> README && git commit -qam c && git gc -q"},
		{"a fetch from a local repository", "git clone -q --no-local . other && echo z > other/z && git -C other add z && git -C other commit -qm z && git fetch -q other main:other"},
		{"a multi-pack-index", "git repack -q && git multi-pack-index write && git commit-graph write --reachable --split"},
	} {
		runWalks(t, tt.name, func(t *testing.T, walk bool) {
			f := newFixture(t)
			f.walk = walk
			f.sh(huskyRepo)
			f.start()
			if notes := f.call(tt.script); len(notes) != 0 {
				t.Errorf("notes %q, want none", notes)
			}
			if out := gitIn(t, f.root, "fsck", "--no-progress"); strings.Contains(out, "missing") {
				t.Errorf("git fsck: %s", out)
			}
		})
	}
}

// A loose object that hashes to its name passes; one that does not, or
// does not inflate, fails, with either hash its name is as long as.
func TestCheckLoose(t *testing.T) {
	dir := t.TempDir()
	content := []byte("hello\n")
	obj := looseBytes(content)
	raw, _ := zlibInflate(obj)
	s1 := fmt.Sprintf("%x", sha1.Sum(raw))
	s256 := fmt.Sprintf("%x", sha256.Sum256(raw))
	for _, tt := range []struct {
		name, oid string
		data      []byte
		ok        bool
	}{
		{"sha1, right", s1, obj, true},
		{"sha1, other content", s1, looseBytes([]byte("planted\n")), false},
		{"not zlib", s1, []byte("plain"), false},
		{"sha256, right", s256, obj, true},
		{"sha256 name, sha1 content", s1 + strings.Repeat("0", 24), obj, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, tt.oid)
			os.WriteFile(p, tt.data, 0o444)
			defer os.Remove(p)
			if err := checkLoose(p, tt.oid, farDeadline()); (err == nil) != tt.ok {
				t.Errorf("got %v, want ok %v", err, tt.ok)
			}
		})
	}
}

func zlibInflate(b []byte) ([]byte, error) {
	r, err := zlib.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(r)
}

func farDeadline() time.Time { return time.Now().Add(time.Minute) }

// BenchmarkCheckObjects is the objects pass of one call's end alone, for
// an ordinary repository (3,000 files in 100 directories) after an honest
// call: a commit while every object is loose, a commit once it is packed,
// a commit and a gc.
func BenchmarkCheckObjects(b *testing.B) {
	git, err := exec.LookPath("git")
	if err != nil {
		b.Skip("needs git")
	}
	sh := func(dir, script string) {
		cmd := exec.Command("sh", "-c", script)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1",
			"GIT_AUTHOR_NAME=A", "GIT_AUTHOR_EMAIL=a@example.com", "GIT_COMMITTER_NAME=A", "GIT_COMMITTER_EMAIL=a@example.com"}
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%s: %v\n%s", script, err, out)
		}
	}
	const repo = `git init -q -b main && for d in $(seq 100); do mkdir d$d; for f in $(seq 30); do echo $d $f > d$d/f$f; done; done && git add -A && git commit -qm initial`
	for _, tt := range []struct{ name, setup, call string }{
		{"a commit, loose objects", "", "echo x >> d1/f1 && git commit -qam x"},
		{"a commit, packed", "git gc -q", "echo x >> d1/f1 && git commit -qam x"},
		{"a commit and gc", "", "echo x >> d1/f1 && git commit -qam x && git gc -q"},
	} {
		b.Run(tt.name, func(b *testing.B) {
			dir, _ := filepath.EvalSymlinks(b.TempDir())
			root := filepath.Join(dir, "ws")
			os.MkdirAll(root, 0o755)
			sh(root, repo)
			if tt.setup != "" {
				sh(root, tt.setup)
			}
			g, err := New(Config{Roots: []Root{{Host: root}}, Git: git, Home: dir, Log: func(string) {}})
			if err != nil {
				b.Fatal(err)
			}
			defer g.Close()
			time.Sleep(1100 * time.Millisecond) // the user's, a second before the calls: Begin looks a second early
			var end, call time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				c, err := g.Begin()
				if err != nil {
					b.Fatal(err)
				}
				t0 := time.Now()
				sh(root, tt.call)
				call += time.Since(t0)
				b.StartTimer()
				if notes := g.checkObjects(g.objectStores()); len(notes) != 0 {
					b.Fatal(notes)
				}
				b.StopTimer()
				t0 = time.Now()
				c.End() // the pass again, with the rest of the end
				end += time.Since(t0)
			}
			// For scale: the honest call itself, and the whole end.
			b.ReportMetric(float64(call.Milliseconds())/float64(b.N), "call-ms/op")
			b.ReportMetric(float64(end.Milliseconds())/float64(b.N), "end-ms/op")
		})
	}
}
