package policy

import (
	"os"
	"path/filepath"
	"testing"
)

// TestResolveIn checks that resolveIn resolves every path as
// filepath.EvalSymlinks does (the same path, or an error for the same
// paths), and reports the first link on the way that lies in the writable
// directory, as the kernel would meet it.
func TestResolveIn(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w := filepath.Join(root, "w") // the writable directory
	for _, d := range []string{"a/b/c", "w/d", "x"} {
		os.MkdirAll(filepath.Join(root, d), 0o755)
	}
	links := map[string]string{
		"a/rel":     "b/c",
		"a/up":      "../x",
		"a/abs":     filepath.Join(root, "a/b"),
		"a/chain":   "rel",
		"a/dotdot":  "rel/../..",
		"w/out":     filepath.Join(root, "x"),
		"x/intow":   filepath.Join(root, "w/d"),
		"x/viaw":    "../w/out",
		"a/loop":    "loop2",
		"a/loop2":   "loop",
		"a/missing": "nothere",
	}
	for l, to := range links {
		if err := os.Symlink(to, filepath.Join(root, l)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		path, link string
	}{
		{"a/b/c", ""},
		{"a/rel", ""},
		{"a/rel/..", ""},
		{"a/up", ""},
		{"a/abs/c", ""},
		{"a/chain", ""},
		{"a/dotdot", ""},
		{"a/dotdot/x/../a/./b", ""},
		{"w/out", "w/out"},
		{"x/intow", ""},
		{"x/viaw", "w/out"},
		{"x/viaw/a", "w/out"},
		{"a/loop", "a/loop"}, // too many links: returned as one that cannot be followed
		{"a/missing", ""},
		{"a/nothing/at/all", ""},
		{"w", ""},
	} {
		path := filepath.Join(root, tt.path)
		real, link, err := resolveIn(path, []string{w})
		wantLink := ""
		if tt.link != "" {
			wantLink = filepath.Join(root, tt.link)
		}
		if link != wantLink || linkIn(path, []string{w}) != wantLink {
			t.Errorf("%s: link %q, want %q", tt.path, link, wantLink)
		}
		if wantLink != "" {
			if err == nil {
				t.Errorf("%s: resolved to %s through the link in w", tt.path, real)
			}
			continue
		}
		want, wantErr := filepath.EvalSymlinks(path)
		if (err != nil) != (wantErr != nil) || err == nil && real != want {
			t.Errorf("%s: resolved to %q (%v), EvalSymlinks %q (%v)", tt.path, real, err, want, wantErr)
		}
	}
}

// TestResolveCreate: the log's walk resolves as open(2) with O_CREAT does
// (a missing last component, a dangling link's target too, is the file to
// create) and stops at the first path it visits in the writable
// directory, link, file or directory: whatever lies there, commands can
// change.
func TestResolveCreate(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w := filepath.Join(root, "w")
	for _, d := range []string{"a/b", "w/d", "x"} {
		os.MkdirAll(filepath.Join(root, d), 0o755)
	}
	os.WriteFile(filepath.Join(root, "x/file"), nil, 0o600)
	for l, to := range map[string]string{
		"x/log":     filepath.Join(root, "w/log"), // finding 4: a final link into w
		"x/dir":     "../w/d",
		"x/dangle":  "../a/b/new",
		"x/deep":    "../a/missing/new",
		"x/through": "../w/d/../../x/file", // out again, but through w/d, which a command can make a link
		"x/slash":   "../a/new/",
		"x/chain":   "dangle",
		"w/out":     filepath.Join(root, "x/file"),
		"a/viaw":    "../w/out",
		"a/loop":    "loop",
	} {
		if err := os.Symlink(to, filepath.Join(root, l)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		path, real, in string // real "" for an error
	}{
		{"x/file", "x/file", ""},
		{"x/new", "x/new", ""},
		{"x/dangle", "a/b/new", ""},
		{"x/chain", "a/b/new", ""},
		{"x/deep", "", ""},
		{"x/slash", "", ""},
		{"x/nothing/new", "", ""},
		{"a/loop", "", ""},
		{"x/log", "", "w"},
		{"x/dir/log", "", "w"},
		{"x/through", "", "w"},
		{"a/viaw", "", "w"},
		{"w/log", "", "w"},
		{"w/d/new", "", "w"},
		{"w/../x/file", "x/file", ""}, // as the flag is made absolute: lexically
	} {
		real, in, err := ResolveCreate(filepath.Join(root, tt.path), []string{w})
		wantIn := ""
		if tt.in != "" {
			wantIn = filepath.Join(root, tt.in)
		}
		if in != wantIn {
			t.Errorf("%s: stopped at %q, want %q", tt.path, in, wantIn)
		}
		if tt.real == "" {
			if err == nil {
				t.Errorf("%s: resolved to %s", tt.path, real)
			}
			continue
		}
		if want := filepath.Join(root, tt.real); err != nil || real != want {
			t.Errorf("%s: resolved to %q (%v), want %q", tt.path, real, err, want)
		}
	}
}
