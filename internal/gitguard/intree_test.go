package gitguard

import (
	"os"
	"path/filepath"
	"testing"
)

// TestInWorkTree: a git directory below a .git component (in any case) is
// out of every work tree's reach; anywhere else in a work tree, its own or
// one above it, it is not. A bare repository has only its own.
func TestInWorkTree(t *testing.T) {
	top := t.TempDir()
	top, _ = filepath.EvalSymlinks(top)
	for _, d := range []string{"repo/.git/modules/sub", "repo/.GIT/x", "repo/.git", "repo/vendor-meta", "repo/a/b/meta", "plain/meta", "plain/x.git"} {
		os.MkdirAll(filepath.Join(top, d), 0o755)
	}
	for _, tt := range []struct {
		dir  string
		own  []string
		bare bool
		want string // the work tree, or "" for none
	}{
		{"repo/.git", []string{"repo"}, false, ""},
		{"repo/.git/modules/sub", []string{"repo/sub"}, false, ""},
		{"repo/.GIT/x", nil, false, ""},
		{"repo/.meta", []string{"repo"}, false, "repo"},
		{"repo", []string{"repo"}, false, "repo"},
		{"repo/vendor-meta", []string{"repo/vendor"}, false, "repo"},
		{"repo/a/b/meta", []string{"repo/a/b/tree"}, false, "repo"},
		{"plain/meta", []string{"plain/tree"}, false, ""},
		{"plain/x.git", nil, true, ""},
		{"repo/vendor-meta", nil, true, ""},
		{"plain/x.git", []string{"plain"}, true, "plain"},
	} {
		var own []string
		for _, o := range tt.own {
			own = append(own, filepath.Join(top, o))
		}
		wt, rel, ok := inWorkTree(filepath.Join(top, tt.dir), own, tt.bare)
		want := ""
		if tt.want != "" {
			want = filepath.Join(top, tt.want)
		}
		if ok != (want != "") || ok && wt != want {
			t.Errorf("inWorkTree(%s, %v, bare %v) = %q, %q, %v; want the work tree %q", tt.dir, tt.own, tt.bare, wt, rel, ok, want)
		}
	}
}
