package sandbox

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
)

// fakeFS is a filesystem for planning: paths ending in "/" are directories.
type fakeFS struct {
	entries map[string]string // path -> "dir", "file" or "symlink"
	files   map[string]string // contents
}

func newFakeFS(paths ...string) *fakeFS {
	f := &fakeFS{entries: map[string]string{}, files: map[string]string{}}
	for _, p := range paths {
		f.add(p)
	}
	return f
}

func (f *fakeFS) add(p string) {
	kind := "file"
	if strings.HasSuffix(p, "/") {
		kind = "dir"
		p = strings.TrimSuffix(p, "/")
	}
	if strings.HasSuffix(p, "@") {
		kind = "symlink"
		p = strings.TrimSuffix(p, "@")
	}
	f.entries[p] = kind
	for d := filepath.Dir(p); d != "/"; d = filepath.Dir(d) {
		if _, ok := f.entries[d]; !ok {
			f.entries[d] = "dir"
		}
	}
}

func (f *fakeFS) Lstat(p string) (exists, dir, symlink bool) {
	k, ok := f.entries[p]
	return ok, k == "dir", k == "symlink"
}

func (f *fakeFS) ReadDir(p string) []string {
	var out []string
	for e := range f.entries {
		if filepath.Dir(e) == p {
			out = append(out, filepath.Base(e))
		}
	}
	sort.Strings(out)
	return out
}

func (f *fakeFS) ReadFile(p string) ([]byte, error) {
	if s, ok := f.files[p]; ok {
		return []byte(s), nil
	}
	return nil, fmt.Errorf("no file %s", p)
}

// opString renders a step compactly for comparison.
func opString(o mountOp) string {
	s := o.Kind.String() + " " + o.Path
	if o.Src != "" && o.Src != o.Path {
		s += " <- " + o.Src
	}
	if o.Make {
		s += " (make)"
	}
	return s
}

func opStrings(ops []mountOp) []string {
	out := make([]string, len(ops))
	for i, o := range ops {
		out[i] = opString(o)
	}
	return out
}

// rootHome is root's home, which is masked like any other.
const rootHome = "/root"

func TestPlanStaticDefault(t *testing.T) {
	fs := newFakeFS("/tmp/", "/var/tmp/", "/run/", "/etc/shadow", "/etc/gshadow",
		"/home/u/proj/", "/home/u/.ssh/id_rsa", "/home/other/.aws/credentials", "/home/other/.bashrc",
		rootHome+"/.ssh/", "/opt/ro/")
	p := &policy.Policy{
		Workspace:   "/home/u/proj",
		Home:        "/home/u",
		PrivateHome: "/home/u/.cache/nanosandbox-mcp/homes/proj-1",
		Grants: []policy.Grant{
			{Path: "/home/u/proj", Writable: true, Dir: true},
			{Path: "/opt/ro", Dir: true},
		},
	}
	sp := planStatic(p, fs)
	want := []string{
		"tmpfs /tmp",
		"tmpfs /run",
		"tmpfs /var/tmp",
		"hide " + rootHome + "/.ssh",
		"mask /etc/shadow",
		"mask /etc/gshadow",
		"bind-rw /home/u <- /home/u/.cache/nanosandbox-mcp/homes/proj-1",
		"hide /home/other/.aws",
		"bind-rw /home/u/proj (make)",
	}
	if diff := cmp.Diff(want, opStrings(sp.ops)); diff != "" {
		t.Errorf("ops (-want +got):\n%s", diff)
	}
	wantW := []string{"/tmp", "/var/tmp", "/run", "/home/u", "/home/u/proj"}
	if diff := cmp.Diff(wantW, sp.writable); diff != "" {
		t.Errorf("writable (-want +got):\n%s", diff)
	}
}

func TestPlanStaticGrantsShowHiddenAgain(t *testing.T) {
	fs := newFakeFS("/tmp/ws/", "/home/u/.ssh/id_rsa", "/home/u/.ssh/known_hosts", "/home/u/docs/", "/home/u/.netrc")
	p := &policy.Policy{
		Workspace: "/tmp/ws",
		Home:      "/home/u",
		Grants: []policy.Grant{
			{Path: "/tmp/ws", Writable: true, Dir: true},
			{Path: "/home/u", Dir: true},                   // the whole home, read-only: credentials still masked
			{Path: "/home/u/.ssh/known_hosts", Dir: false}, // named by the user: shown inside the mask
		},
		HomeGranted: true,
	}
	sp := planStatic(p, fs)
	want := []string{
		"tmpfs /tmp",
		"bind-rw /tmp/ws (make)",
		"hide /home/u/.ssh",
		"mask /home/u/.netrc",
		"bind-ro /home/u/.ssh/known_hosts (make)",
	}
	if diff := cmp.Diff(want, opStrings(sp.ops)); diff != "" {
		t.Errorf("ops (-want +got):\n%s", diff)
	}
}

func TestPlanStaticHiddenHomeWithoutPrivateHome(t *testing.T) {
	fs := newFakeFS("/home/u/proj/", "/home/u/.ssh/id_rsa")
	p := &policy.Policy{
		Workspace: "/home/u/proj",
		Home:      "/home/u",
		Grants:    []policy.Grant{{Path: "/home/u/proj", Writable: true, Dir: true}},
	}
	want := []string{"hide /home/u", "bind-rw /home/u/proj (make)"}
	if diff := cmp.Diff(want, opStrings(planStatic(p, fs).ops)); diff != "" {
		t.Errorf("ops (-want +got):\n%s", diff)
	}
}

func gitRepo(root string) []string {
	return []string{root + "/.git/hooks/", root + "/.git/config", root + "/.git/objects/", root + "/.git/HEAD"}
}

func TestGitProtections(t *testing.T) {
	ws := "/w"
	p := &policy.Policy{Workspace: ws, Grants: []policy.Grant{{Path: ws, Writable: true, Dir: true}}}
	base := []string{"/w/HEAD file placeholder", "/w/.git/hooks dir", "/w/.git/config file",
		"/w/.git/commondir file placeholder", "/w/.git/config.worktree file placeholder"}
	for _, tt := range []struct {
		name  string
		paths []string
		cfg   string
		want  []string
	}{
		{"no repository", []string{"/w/"}, "", []string{"/w/HEAD file placeholder", "/w/.git dir placeholder"}},
		{"plain repository", gitRepo(ws), "", append(base, "/w/.git/modules dir placeholder")},
		{"a HEAD file in the workspace", append(gitRepo(ws), "/w/HEAD"), "", append([]string{"/w/HEAD file"}, append(base[1:], "/w/.git/modules dir placeholder")...)},
		{"no hooks", []string{"/w/.git/config", "/w/.git/HEAD"}, "", []string{
			"/w/HEAD file placeholder", "/w/.git/hooks dir placeholder", "/w/.git/config file",
			"/w/.git/commondir file placeholder", "/w/.git/config.worktree file placeholder", "/w/.git/modules dir placeholder",
		}},
		{"submodules whole, worktrees by file", append(gitRepo(ws), "/w/.git/modules/lib/hooks/", "/w/.git/modules/lib/config",
			"/w/.git/worktrees/wt/config.worktree", "/w/.git/worktrees/wt/commondir", "/w/.git/config.worktree"), "", []string{
			"/w/HEAD file placeholder", "/w/.git/hooks dir", "/w/.git/config file", "/w/.git/commondir file placeholder",
			"/w/.git/config.worktree file", "/w/.git/modules dir",
			"/w/.git/worktrees/wt/commondir file", "/w/.git/worktrees/wt/config.worktree file",
		}},
		{"husky hooksPath and an include", append(gitRepo(ws), "/w/.husky/_/"), "[core]\n\thooksPath = .husky/_\n[include]\n\tpath = ../shared.gitconfig\n",
			append(append(base, "/w/.git/modules dir placeholder"), "/w/.husky/_ dir", "/w/shared.gitconfig file placeholder")},
		{"hooksPath whose parent is missing", gitRepo(ws), "[core]\n\thooksPath = .husky/_\n",
			append(append(base, "/w/.git/modules dir placeholder"), "/w/.husky dir placeholder")},
		{"hooksPath outside the workspace", gitRepo(ws), "[core]\n\thooksPath = /etc/githooks\n", append(base, "/w/.git/modules dir placeholder")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fs := newFakeFS(tt.paths...)
			if tt.cfg != "" {
				fs.files["/w/.git/config"] = tt.cfg
			}
			prots, _, err := gitProtections(p, fs)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, pr := range prots {
				s := pr.Path + " file"
				if pr.Dir {
					s = pr.Path + " dir"
				}
				if pr.Placeholder {
					s += " placeholder"
				}
				if pr.Root != ws {
					t.Errorf("%s: root %q, want %q", pr.Path, pr.Root, ws)
				}
				got = append(got, s)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("protections (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGitProtectionsRefuseSymlinks(t *testing.T) {
	p := &policy.Policy{Workspace: "/w", Grants: []policy.Grant{{Path: "/w", Writable: true, Dir: true}}}
	for _, paths := range [][]string{
		{"/w/.git@"},
		append(gitRepo("/w"), "/w/.git/modules@"),
	} {
		if _, _, err := gitProtections(p, newFakeFS(paths...)); err == nil || !strings.Contains(err.Error(), "symbolic link") {
			t.Errorf("%v: got %v, want a refusal of the symlink", paths[len(paths)-1], err)
		}
	}
	// A symlinked worktrees directory, or entry, is not followed.
	for _, paths := range [][]string{
		append(gitRepo("/w"), "/w/.git/worktrees@"),
		append(gitRepo("/w"), "/w/.git/worktrees/x@", "/w/.git/worktrees/y/config"),
	} {
		prots, _, err := gitProtections(p, newFakeFS(paths...))
		if err != nil {
			t.Fatal(err)
		}
		for _, pr := range prots {
			if strings.Contains(pr.Path, "/worktrees/x") || strings.HasSuffix(pr.Path, "/worktrees") {
				t.Errorf("followed a symlink: %s", pr.Path)
			}
		}
	}
}

func TestGitProtectionsLiftedByWritableGrant(t *testing.T) {
	p := &policy.Policy{Workspace: "/w", Grants: []policy.Grant{
		{Path: "/w", Writable: true, Dir: true},
		{Path: "/w/.husky/_", Writable: true, Dir: true},
	}}
	fs := newFakeFS(append(gitRepo("/w"), "/w/.husky/_/")...)
	fs.files["/w/.git/config"] = "[core]\nhooksPath=.husky/_\n"
	prots, _, _ := gitProtections(p, fs)
	for _, pr := range prots {
		if pr.Path == "/w/.husky/_" {
			t.Fatalf("a --writable grant did not lift the protection of %s", pr.Path)
		}
	}
}

func TestPlanCallPinsBeforeCarveOuts(t *testing.T) {
	p := &policy.Policy{Workspace: "/w", Grants: []policy.Grant{
		{Path: "/w", Writable: true, Dir: true},
		{Path: "/w/a/b/ro", Dir: true},                    // a carve-out two levels down
		{Path: "/w/a/b/ro/rw", Writable: true, Dir: true}, // writable again inside it
	}}
	fs := newFakeFS("/w/a/b/ro/rw/", "/w/.git/hooks/", "/w/.git/config")
	sp := planStatic(p, fs)
	prots, _, _ := gitProtections(p, fs)
	got := opStrings(planCall(p, sp, prots, fs))
	want := []string{
		"bind-rw /w",
		"pin /w/a",
		"pin /w/.git",
		"protect /w/HEAD",
		"pin /w/a/b",
		"protect /w/.git/hooks",
		"protect /w/.git/config",
		"protect /w/.git/commondir",
		"protect /w/.git/config.worktree",
		"protect /w/.git/modules",
		"protect /w/a/b/ro",
		"bind-rw /w/a/b/ro/rw",
	}
	// (/w/a/b/ro/rw is writable but no repository: no stand-in .git there.)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ops (-want +got):\n%s", diff)
	}
}

func TestParseGitConfig(t *testing.T) {
	hooks, inc := parseGitConfig([]byte(`# comment
[core]
	bare = false
	HooksPath = "./my hooks" ; trailing comment
[include]
	path = a.inc
[includeIf "gitdir:/x/"]
	path = b.inc
[remote "origin"]
	path = not-an-include
`))
	if hooks != "./my hooks" {
		t.Errorf("hooksPath: got %q", hooks)
	}
	if diff := cmp.Diff([]string{"a.inc", "b.inc"}, inc); diff != "" {
		t.Errorf("includes (-want +got):\n%s", diff)
	}
}
