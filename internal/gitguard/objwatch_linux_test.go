package gitguard

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// objPath is where repo keeps the loose object oid.
func objPath(repo, oid string) string {
	return filepath.Join(repo, ".git", "objects", oid[:2], oid[2:])
}

// A server's guard stats only the loose objects an event touched
// (objwatch_linux.go). Each attack here changes a loose object of the
// user's repository after a call has watched them all, in a way the
// object's own directory sees nothing of, or sees late: each is caught at
// the end of the call that made it, the object moved aside, and the
// user's git runs nothing planted.
func TestObjectWatchSeesEveryWrite(t *testing.T) {
	const note = "is a loose object that does not hold what its name says"
	for _, tt := range []struct {
		name string
		// before runs in an earlier call (a link made honestly, say);
		// plant in the call judged.
		before func(f *fixture, p string)
		plant  func(f *fixture, p string)
		// garbled: what is planted is not an object at all, so the
		// user's git finds it corrupt rather than running anything;
		// only the note is checked.
		garbled bool
	}{
		{name: "rewritten in place",
			plant: func(f *fixture, p string) { writeObj(f.t, p, looseBytes(plantedHook(f.marker))) }},
		{name: "rewritten through a hard link made in the same call, then removed",
			plant: func(f *fixture, p string) {
				l := filepath.Join(f.root, "l")
				if err := os.Link(p, l); err != nil {
					f.t.Fatal(err)
				}
				writeObj(f.t, l, looseBytes(plantedHook(f.marker)))
				os.Remove(l)
			}},
		{name: "rewritten through a hard link an earlier call made",
			before: func(f *fixture, p string) {
				if err := os.Link(p, filepath.Join(f.root, "l")); err != nil {
					f.t.Fatal(err)
				}
			},
			plant: func(f *fixture, p string) {
				writeObj(f.t, filepath.Join(f.root, "l"), looseBytes(plantedHook(f.marker)))
			}},
		{name: "written through a shared mapping whose descriptor was closed first, the object already writable",
			before: func(f *fixture, p string) { os.Chmod(p, 0o644) },
			plant: func(f *fixture, p string) {
				fd, err := syscall.Open(p, syscall.O_RDWR, 0)
				if err != nil {
					f.t.Fatal(err)
				}
				st, _ := os.Stat(p)
				m, err := syscall.Mmap(fd, 0, int(st.Size()), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
				syscall.Close(fd)
				if err != nil {
					f.t.Fatal(err)
				}
				copy(m, "garbage, not zlib")
				syscall.Munmap(m)
			},
			garbled: true},
		{name: "replaced by a rename from the work tree",
			plant: func(f *fixture, p string) {
				tmp := filepath.Join(f.root, "tmp")
				os.WriteFile(tmp, looseBytes(plantedHook(f.marker)), 0o444)
				if err := os.Rename(tmp, p); err != nil {
					f.t.Fatal(err)
				}
			}},
		{name: "its fan-out directory swapped for a copy",
			plant: func(f *fixture, p string) {
				fan := filepath.Dir(p)
				f.sh("cp -a " + fan + " " + fan + ".new && mv " + fan + " " + fan + ".old && mv " + fan + ".new " + fan)
				writeObj(f.t, p, looseBytes(plantedHook(f.marker)))
			}},
		{name: "the object directory swapped for a copy",
			plant: func(f *fixture, p string) {
				f.sh("cp -a .git/objects .git/objects.new && mv .git/objects .git/objects.old && mv .git/objects.new .git/objects")
				writeObj(f.t, p, looseBytes(plantedHook(f.marker)))
			}},
		{name: "rewritten after the event queue overflowed",
			plant: func(f *fixture, p string) {
				// Opens of two other objects in turn (the same event twice
				// in a row is merged): more than the queue holds, so the
				// rewrite's own events are lost.
				others := otherObjects(f, p, 2)
				for i := 0; i < 20000; i++ {
					fd, err := syscall.Open(others[i%2], syscall.O_RDONLY, 0)
					if err != nil {
						f.t.Fatal(err)
					}
					syscall.Close(fd)
				}
				writeObj(f.t, p, looseBytes(plantedHook(f.marker)))
			}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.sh(huskyRepo)
			p := objPath(f.root, hookOid(t, f.root))
			f.start()
			if notes := f.call(""); len(notes) != 0 { // watches them all
				t.Fatalf("the first call noted %q", notes)
			}
			if f.g.objw == nil || f.g.objw.files == 0 {
				t.Skip("no object is watched here (inotify, or a filesystem it cannot vouch for): every object is stat'ed, as the other tests check")
			}
			// The second call finds every watch valid: the store is
			// marked clean, and the ends after it visit none of its
			// watches while nothing moved the watcher's generation. Each
			// attack below comes after that.
			if notes := f.call(""); len(notes) != 0 {
				t.Fatalf("the second call noted %q", notes)
			}
			assertStoreClean(t, f.g.objw)
			if tt.before != nil {
				c, err := f.g.Begin()
				if err != nil {
					t.Fatal(err)
				}
				tt.before(f, p)
				if notes := c.End(); len(notes) != 0 {
					t.Fatalf("the earlier call noted %q", notes)
				}
			}
			c, err := f.g.Begin()
			if err != nil {
				t.Fatal(err)
			}
			tt.plant(f, p)
			notes := c.End()
			if !strings.Contains(strings.Join(notes, "\n"), note) {
				t.Errorf("notes %q, want one containing %q", notes, note)
			}
			if !tt.garbled && f.userCheckout() {
				t.Errorf("the user's git ran the planted hook; notes: %q", notes)
			}
			if more := f.call(""); len(more) != 0 {
				t.Errorf("the next call noted %q", more)
			}
		})
	}
}

// assertStoreClean fails t unless every object store w watches is marked
// clean at its current generation: the state in which an end skips it.
func assertStoreClean(t *testing.T, w *objWatcher) {
	t.Helper()
	if len(w.stores) == 0 {
		t.Fatal("no object store is watched")
	}
	for dir, sw := range w.stores {
		if sw.cleanGen == 0 || sw.cleanGen != w.gen {
			t.Fatalf("%s: not marked clean (generation %d, now %d)", dir, sw.cleanGen, w.gen)
		}
	}
}

// Two calls at once: the watches the first one's end adds come after the
// second began, so the second's end stats what the first's skipped.
func TestObjectWatchConcurrentCalls(t *testing.T) {
	f := newFixture(t)
	f.sh(huskyRepo)
	p := objPath(f.root, hookOid(t, f.root))
	f.start()
	a, err := f.g.Begin()
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.g.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if notes := a.End(); len(notes) != 0 {
		t.Fatalf("a noted %q", notes)
	}
	writeObj(t, p, looseBytes(plantedHook(f.marker)))
	notes := b.End()
	if !strings.Contains(strings.Join(notes, "\n"), "does not hold what its name says") {
		t.Errorf("b noted %q", notes)
	}
	if f.userCheckout() {
		t.Error("the user's git ran the planted hook")
	}
}

// Honest calls after the objects are watched: commits, a gc that prunes
// them, a repack, an object git freshens; nothing is noted, the repository
// stays whole, and what is watched follows what exists.
func TestObjectWatchHonest(t *testing.T) {
	f := newFixture(t)
	f.sh(huskyRepo)
	f.start()
	f.call("")
	for _, script := range []string{
		"echo c >> README && git commit -qam c",
		"git hash-object -w README >/dev/null", // an existing object, freshened
		"ln .git/objects/$(git rev-parse HEAD:README | cut -c1-2)/$(git rev-parse HEAD:README | cut -c3-) copy-of-blob",
		"git log -p >/dev/null && git status >/dev/null",
		"echo d >> README && git commit -qam d && git gc -q",
		"echo e >> README && git commit -qam e",
		"git repack -qad && git prune",
	} {
		if notes := f.call(script); len(notes) != 0 {
			t.Errorf("%s: notes %q", script, notes)
		}
	}
	if out := gitIn(t, f.root, "fsck", "--no-progress"); strings.Contains(out, "missing") || strings.Contains(out, "corrupt") {
		t.Errorf("git fsck: %s", out)
	}
	w := f.g.objw
	if w == nil || w.fd < 0 {
		t.Skip("no inotify here")
	}
	loose := 0
	filepath.Walk(filepath.Join(f.root, ".git", "objects"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() && len(fi.Name()) == 38 {
			loose++
		}
		return nil
	})
	f.call("")
	if w.files != loose {
		t.Errorf("%d object watches held for %d loose objects", w.files, loose)
	}
}

// writeObj writes b over the object file at p, as its owner can.
func writeObj(t *testing.T, p string, b []byte) {
	t.Helper()
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// otherObjects lists n loose objects of f's repository other than p.
func otherObjects(f *fixture, p string, n int) []string {
	var out []string
	filepath.Walk(filepath.Join(f.root, ".git", "objects"), func(q string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() && len(fi.Name()) == 38 && q != p && len(out) < n {
			out = append(out, q)
		}
		return nil
	})
	if len(out) < n {
		f.t.Fatalf("fewer than %d other loose objects", n)
	}
	return out
}
