package gitguard

import (
	"os"
	"path/filepath"
	"testing"
)

// What the guard reads from a writable root comes from a command: no input
// may panic it, and what cannot be read must not pass for harmless.

func FuzzParseGitfile(f *testing.F) {
	for _, s := range []string{"gitdir: /x\n", "gitdir: ../m\r\n", "gitdir:", "gitdir: \x00", "\xff\xfe"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := parseGitfile(b, "/w/sub")
		if err == nil && !filepath.IsAbs(p) {
			t.Errorf("%q: relative target %q", b, p)
		}
	})
}

func FuzzParseListing(f *testing.F) {
	for _, s := range []string{"core.bare\x00", "a.b.c\nv\x00", "x\x00", ".\x00", "a.\nb\x00", "a..b\n\x00"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, err := parseListing(b)
		if err != nil {
			return
		}
		for _, e := range entries {
			if e.Section == "" || e.Name == "" {
				t.Errorf("%q: an entry with no section or name: %+v", b, e)
			}
		}
	})
}

// FuzzResolve writes fuzzed bytes where git reads a .git file, a commondir
// and a config, and resolves and judges the result.
func FuzzResolve(f *testing.F) {
	f.Add([]byte("gitdir: g\n"), []byte("../c\n"), []byte("[core]\n\tbare = false\n"))
	f.Add([]byte("gitdir: /dev/zero\n"), []byte(""), []byte("[include]\npath=/etc/passwd\n"))
	f.Add([]byte("gitdir: ../../../../x\n"), []byte("/\n"), []byte("\x00\x00"))
	f.Fuzz(func(t *testing.T, gitfile, commondir, config []byte) {
		root, _ := filepath.EvalSymlinks(t.TempDir()) // canonical, as the guard's roots are
		g := filepath.Join(root, "sub", "g")
		os.MkdirAll(g, 0o755)
		os.MkdirAll(filepath.Join(root, "c"), 0o755)
		os.WriteFile(filepath.Join(root, "sub", ".git"), gitfile, 0o644)
		os.WriteFile(filepath.Join(g, "commondir"), commondir, 0o644)
		os.WriteFile(filepath.Join(g, "config"), config, 0o644)
		os.WriteFile(filepath.Join(root, "c", "config"), config, 0o644)
		list := func(b []byte) ([]entry, error) { return parseListing(b) }
		gd := &Guard{cfg: Config{Roots: []Root{{Host: root}}}, list: list, listings: map[string]listing{}, byContent: map[[32]byte]listing{},
			seen: map[string]bool{}, trusted: map[candidate][]element{}, suspect: map[candidate]string{}, ph: placeholders{}}
		gd.res = resolver{home: root, list: gd.listCached, placeholder: gd.ph.pristine}
		els := gd.res.resolve(candidate{entry: filepath.Join(root, "sub", ".git")})
		if len(els) == 0 || els[0].role != roleEntry {
			t.Fatalf("no entry element: %+v", els)
		}
		gd.judge(candidate{entry: filepath.Join(root, "sub", ".git")}, els, els)
	})
}
