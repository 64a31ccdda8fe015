package policy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParseGrant feeds arbitrary flag values to New: it must never panic,
// and a grant it accepts is absolute, clean, free of symlinks and exists.
func FuzzParseGrant(f *testing.F) {
	root := f.TempDir()
	os.MkdirAll(filepath.Join(root, "ws/sub"), 0o755)
	os.Symlink(filepath.Join(root, "ws"), filepath.Join(root, "link"))
	for _, s := range []string{"sub", "../ws", "link/sub", "/", ".", "", "a\x00b", "ws/../../..", "//ws///sub/", "link/../ws"} {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, raw string, writable bool) {
		o := Options{Workspace: filepath.Join(root, "ws")}
		path := raw
		if !filepath.IsAbs(path) {
			path = filepath.Join(root, path)
		}
		if writable {
			o.Writable = []string{path}
		} else {
			o.ReadOnly = []string{path}
		}
		p, err := New(o)
		if err != nil {
			var fe *FlagError
			if !errors.As(err, &fe) {
				t.Fatalf("got a %T, want *FlagError: %v", err, err)
			}
			return
		}
		for _, g := range p.Grants {
			if !filepath.IsAbs(g.Path) || filepath.Clean(g.Path) != g.Path {
				t.Fatalf("grant %q is not absolute and clean", g.Path)
			}
			if real, err := filepath.EvalSymlinks(g.Path); err != nil || real != g.Path {
				t.Fatalf("grant %q resolves to %q, %v", g.Path, real, err)
			}
			if g.Writable && g.Path == "/" {
				t.Fatal("the root directory was granted writable")
			}
		}
	})
}

// FuzzCheck: Check never panics, refuses what exec could not pass on (a NUL
// byte) and accepts the rest below the size limit.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{"ls", "", "a\x00", "sh", strings.Repeat("x", 100)} {
		f.Add(s, "-la", "")
	}
	p := &Policy{}
	f.Fuzz(func(t *testing.T, command, arg, stdin string) {
		err := p.Check(command, []string{arg}, stdin)
		bad := command == "" || strings.ContainsRune(command, 0) || strings.ContainsRune(arg, 0)
		if bad != (err != nil) {
			t.Fatalf("Check(%q, [%q]): got %v, want refused=%v", command, arg, err, bad)
		}
	})
}

// FuzzParseHost: ParseHost never panics; what it accepts reads back the
// same from its String, and allows only names NormalHost accepts.
func FuzzParseHost(f *testing.F) {
	for _, s := range []string{"example.com", "*.example.com:8443", "[::1]:80", "::1", "127.0.0.1:8080", "127.1", "0x7f.1", "a..b", "*", "@npm", "EXAMPLE.com.", "[::1", "fe80::1%lo"} {
		f.Add(s, "www.example.com", 443)
	}
	f.Fuzz(func(t *testing.T, raw, name string, port int) {
		h, err := ParseHost(raw)
		if err != nil {
			var fe *FlagError
			if !errors.As(err, &fe) {
				t.Fatalf("got a %T, want *FlagError: %v", err, err)
			}
			return
		}
		again, err := ParseHost(h.String())
		if err != nil || again != h {
			t.Fatalf("%q: String %q reads back as %+v, %v; want %+v", raw, h.String(), again, err, h)
		}
		if m, ok := MatchHost([]Host{h}, name, port); ok {
			if _, err := NormalHost(name); err != nil || m != h {
				t.Fatalf("%+v allows %q:%d, which NormalHost refuses (%v)", h, name, port, err)
			}
		}
	})
}
