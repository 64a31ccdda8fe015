package sandbox

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nanosandbox/nanosandbox-mcp/internal/gitguard"
	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
)

// fakeFS is a filesystem for planning: paths ending in "/" are directories.
type fakeFS struct {
	entries map[string]string // path -> "dir", "file" or "symlink"
	files   map[string]string // contents
	links   map[string]string // a symlink's target
	owners  map[string]int    // uid, 0 where unset
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

// Readlink returns the target set in links; a symlink without one
// dangles.
func (f *fakeFS) Readlink(p string) (string, error) {
	if t, ok := f.links[p]; ok && f.entries[p] == "symlink" {
		return t, nil
	}
	return "", fmt.Errorf("no link %s", p)
}

// Owner returns the uid set in owners, or 0.
func (f *fakeFS) Owner(p string) int {
	if _, ok := f.entries[p]; !ok && p != "/" {
		return -1
	}
	return f.owners[p]
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

func TestPlanCallPinsBeforeCarveOuts(t *testing.T) {
	p := &policy.Policy{Workspace: "/w", Grants: []policy.Grant{
		{Path: "/w", Writable: true, Dir: true},
		{Path: "/w/a/b/ro", Dir: true},                    // a carve-out two levels down
		{Path: "/w/a/b/ro/rw", Writable: true, Dir: true}, // writable again inside it
	}}
	fs := newFakeFS("/w/a/b/ro/rw/", "/w/.git/hooks/", "/w/.git/config")
	sp := planStatic(p, fs)
	git := gitOps([]gitguard.Protection{{Path: "/w/.git/config"}, {Path: "/w/.git/hooks", Dir: true}, {Path: "/w/a/b/ro/rw/.git", Link: true}})
	got := opStrings(planCall(p, sp, git, fs))
	want := []string{
		"bind-rw /w",
		"pin /w/a",
		"pin /w/.git",
		"pin /w/a/b",
		"protect /w/.git/config",
		"protect /w/.git/hooks",
		"protect /w/a/b/ro",
		"bind-rw /w/a/b/ro/rw",
		"protect /w/a/b/ro/rw/.git",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ops (-want +got):\n%s", diff)
	}
}

// TestPlanCallMasksLaterCredentials checks that a call hides the
// credentials that exist when it starts, not only those that existed when
// the server planned: a login while the server is up (gh auth login, aws
// configure), a home added to /home, a credential that shows through
// another mount too. One that went is no longer masked (its mount point
// would be missing), and a host that did not change keeps its plan.
func TestPlanCallMasksLaterCredentials(t *testing.T) {
	fs := aliasFS{
		fakeFS:  newFakeFS("/tmp/", "/home/u/ws/", "/home/u/.config/git/config", "/home/u/.netrc", "/mnt/cfg/"),
		aliases: map[string][]alias{"/home/u": {{Path: "/mnt/cfg", Part: true}}},
	}
	p := &policy.Policy{
		Workspace: "/home/u/ws",
		Home:      "/home/u",
		Grants: []policy.Grant{
			{Path: "/home/u/ws", Writable: true, Dir: true},
			{Path: "/home/u/.config", Dir: true}, // --read-only ~/.config
			{Path: "/mnt/cfg", Dir: true},        // the same directory through another mount
		},
	}
	masks := func(ops []mountOp) []string {
		var out []string
		for _, o := range ops {
			if o.Kind == opMask || o.Kind == opHide && o.Path != p.Home {
				out = append(out, opString(o))
			}
		}
		return out
	}
	sp := planStatic(p, fs)
	if got := sp.current(p, fs); got != &sp {
		t.Fatalf("a host that did not change was planned again")
	}
	if diff := cmp.Diff([]string(nil), masks(planCall(p, *sp.current(p, fs), nil, fs))); diff != "" {
		t.Fatalf("masks before (-want +got):\n%s", diff)
	}

	// Created on the host after the start.
	fs.add("/home/u/.config/gh/hosts.yml")
	fs.add("/mnt/cfg/gh/hosts.yml")
	fs.aliases["/home/u/.config/gh"] = []alias{{Path: "/mnt/cfg/gh"}} // hostFS finds aliases of what exists
	fs.add("/home/new/.aws/credentials")
	fs.add("/home/u/.ssh/id_ed25519") // inside the hidden home: nothing to mask
	now := sp.current(p, fs)
	want := []string{
		"hide /mnt/cfg/gh",
		"hide /home/new/.aws",
		"hide /home/u/.config/gh", // in the host's tree, shown again: never made
	}
	if diff := cmp.Diff(want, masks(planCall(p, *now, nil, fs))); diff != "" {
		t.Errorf("masks after credentials appeared (-want +got):\n%s", diff)
	}
	if again := now.current(p, fs); again != now {
		t.Errorf("the new plan was planned again with nothing changed")
	}

	// Gone again: no mask over a missing file.
	delete(fs.entries, "/home/u/.config/gh/hosts.yml")
	delete(fs.entries, "/home/u/.config/gh")
	delete(fs.entries, "/mnt/cfg/gh/hosts.yml")
	delete(fs.entries, "/mnt/cfg/gh")
	delete(fs.aliases, "/home/u/.config/gh")
	want = []string{"hide /home/new/.aws"}
	if diff := cmp.Diff(want, masks(planCall(p, *now.current(p, fs), nil, fs))); diff != "" {
		t.Errorf("masks after a credential went (-want +got):\n%s", diff)
	}
}

// TestPlanStaticHidesStateDir: the server's state directory, which holds
// every workspace's private home, is hidden wherever a command would see
// it (a --read-only home, a cache outside the home, another mount of it),
// and nowhere it is hidden already; a grant that names it shows it.
func TestPlanStaticHidesStateDir(t *testing.T) {
	fs := aliasFS{
		fakeFS: newFakeFS("/tmp/", "/home/u/proj/", "/home/u/.cache/nanosandbox-mcp/homes/proj-1/",
			"/srv/cache/nanosandbox-mcp/homes/proj-1/", "/mnt/state/", "/mnt/one/"),
		aliases: map[string][]alias{
			"/srv/cache/nanosandbox-mcp": {{Path: "/mnt/state"}, {Path: "/mnt/one", Part: true}},
		},
	}
	ws := policy.Grant{Path: "/home/u/proj", Writable: true, Dir: true}
	for _, tt := range []struct {
		name string
		p    policy.Policy
		want []string
	}{
		{"in the hidden home", policy.Policy{Home: "/home/u", PrivateHome: "/home/u/.cache/nanosandbox-mcp/homes/proj-1",
			StateDir: "/home/u/.cache/nanosandbox-mcp", Grants: []policy.Grant{ws}},
			[]string{"tmpfs /tmp", "bind-rw /home/u <- /home/u/.cache/nanosandbox-mcp/homes/proj-1", "bind-rw /home/u/proj (make)"}},
		{"in a read-only home", policy.Policy{Home: "/home/u", HomeGranted: true,
			StateDir: "/home/u/.cache/nanosandbox-mcp", Grants: []policy.Grant{ws, {Path: "/home/u", Dir: true}}},
			[]string{"tmpfs /tmp", "bind-rw /home/u/proj", "hide /home/u/.cache/nanosandbox-mcp"}},
		{"outside the home, with its other mounts", policy.Policy{Home: "/home/u", PrivateHome: "/srv/cache/nanosandbox-mcp/homes/proj-1",
			StateDir: "/srv/cache/nanosandbox-mcp", Grants: []policy.Grant{ws}},
			[]string{"tmpfs /tmp", "hide /mnt/state", "hide /mnt/one", "bind-rw /home/u <- /srv/cache/nanosandbox-mcp/homes/proj-1",
				"hide /srv/cache/nanosandbox-mcp", "bind-rw /home/u/proj (make)"}},
		{"named by a grant", policy.Policy{Home: "/home/u", PrivateHome: "/srv/cache/nanosandbox-mcp/homes/proj-1",
			StateDir: "/srv/cache/nanosandbox-mcp", Grants: []policy.Grant{ws, {Path: "/srv/cache/nanosandbox-mcp", Dir: true}}},
			[]string{"tmpfs /tmp", "bind-rw /home/u <- /srv/cache/nanosandbox-mcp/homes/proj-1", "bind-rw /home/u/proj (make)"}},
		{"not made yet", policy.Policy{Home: "/home/u", HomeGranted: true,
			StateDir: "/home/u/.cache/none", Grants: []policy.Grant{ws, {Path: "/home/u", Dir: true}}},
			[]string{"tmpfs /tmp", "bind-rw /home/u/proj"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.p.Workspace = ws.Path
			if diff := cmp.Diff(tt.want, opStrings(planStatic(&tt.p, fs).ops)); diff != "" {
				t.Errorf("ops (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPlanStaticMakesOnlyInOwnedTrees: a mount point is made only where
// the mount right above it is the sandbox's (a tmpfs, the private home),
// never inside a host tree shown again there, which is the user's.
func TestPlanStaticMakesOnlyInOwnedTrees(t *testing.T) {
	p := &policy.Policy{
		Workspace:   "/tmp/ws",
		Home:        "/home/u",
		PrivateHome: "/state/homes/ws-1",
		Grants: []policy.Grant{
			{Path: "/tmp/ws", Writable: true, Dir: true},
			{Path: "/tmp/ws/out/deep", Writable: true, Dir: true},
			{Path: "/home/u/.cargo/bin", Dir: true, Flag: "home tools"},
		},
	}
	fs := newFakeFS("/tmp/ws/out/deep/", "/home/u/.cargo/bin/")
	want := []string{
		"tmpfs /tmp",
		"bind-rw /home/u <- /state/homes/ws-1",
		"bind-rw /tmp/ws (make)",
		"bind-ro /home/u/.cargo/bin (make)",
		"bind-rw /tmp/ws/out/deep",
	}
	if diff := cmp.Diff(want, opStrings(planStatic(p, fs).ops)); diff != "" {
		t.Errorf("ops (-want +got):\n%s", diff)
	}
}

// TestPlanCallMakesPinsInPrivateHome: the pins above a grant's mount point
// in the private home are made where missing (the first call of a fresh
// private home has nothing there yet), and only those: not pins above
// git's carve-outs, nor anything in the user's own trees, where a mount
// point is never made (a --writable path shown inside the workspace in a
// tmpfs).
func TestPlanCallMakesPinsInPrivateHome(t *testing.T) {
	p := &policy.Policy{
		Workspace:   "/tmp/ws",
		Home:        "/home/u",
		PrivateHome: "/state/homes/ws-1",
		Grants: []policy.Grant{
			{Path: "/tmp/ws", Writable: true, Dir: true},
			{Path: "/tmp/ws/out/deep", Writable: true, Dir: true},
			{Path: "/home/u/.cargo/bin", Dir: true, Flag: "home tools"},
			{Path: "/home/u/.config/tool/config", Flag: "--read-only"},
		},
	}
	fs := newFakeFS("/tmp/ws/out/deep/", "/home/u/.cargo/bin/", "/home/u/.config/tool/config", "/home/u/proj/.git/config")
	sp := planStatic(p, fs)
	git := gitOps([]gitguard.Protection{{Path: "/home/u/proj/.git/config"}})
	want := []string{
		"tmpfs /tmp",
		"bind-rw /home/u <- /state/homes/ws-1",
		"bind-rw /tmp/ws (make)",
		"pin /home/u/.cargo (make)",
		"pin /home/u/.config (make)",
		"pin /home/u/proj",
		"bind-ro /home/u/.cargo/bin (make)",
		"bind-rw /tmp/ws/out/deep",
		"pin /home/u/.config/tool (make)",
		"pin /home/u/proj/.git",
		"protect /home/u/.cargo/bin",
		"bind-ro /home/u/.config/tool/config (make)",
		"protect /home/u/.config/tool/config",
		"protect /home/u/proj/.git/config",
	}
	if diff := cmp.Diff(want, opStrings(planCall(p, sp, git, fs))); diff != "" {
		t.Errorf("ops (-want +got):\n%s", diff)
	}
}

// TestPlanStaticHidesWorkspaceParent: a workspace inside the home, not
// right below it, has its parent as an empty read-only tree in the private
// home, with the workspace and the grants below it shown again: a sibling
// written there would land in the private home, unseen.
func TestPlanStaticHidesWorkspaceParent(t *testing.T) {
	fs := newFakeFS("/tmp/", "/home/u/src/proj/", "/home/u/src/lib/", "/home/u/proj/", "/home/u/.config/nvim/", "/home/u/.cache/nanosandbox-mcp/homes/proj-1/", "/srv/ws/")
	ph := "/home/u/.cache/nanosandbox-mcp/homes/proj-1"
	for _, tt := range []struct {
		name   string
		ws     string
		grants []policy.Grant
		want   []string
	}{
		{"two levels below the home", "/home/u/src/proj", []policy.Grant{{Path: "/home/u/src/lib", Dir: true}},
			[]string{"tmpfs /tmp", "bind-rw /home/u <- " + ph, "hide /home/u/src (make)", "bind-ro /home/u/src/lib (make)", "bind-rw /home/u/src/proj (make)"}},
		{"right below the home", "/home/u/proj", nil,
			[]string{"tmpfs /tmp", "bind-rw /home/u <- " + ph, "bind-rw /home/u/proj (make)"}},
		{"a parent the user granted", "/home/u/src/proj", []policy.Grant{{Path: "/home/u/src", Dir: true}},
			[]string{"tmpfs /tmp", "bind-rw /home/u <- " + ph, "bind-ro /home/u/src (make)", "bind-rw /home/u/src/proj"}},
		{"in a dot directory of the home", "/home/u/.config/nvim", nil,
			[]string{"tmpfs /tmp", "bind-rw /home/u <- " + ph, "bind-rw /home/u/.config/nvim (make)"}},
		{"outside the home", "/srv/ws", nil,
			[]string{"tmpfs /tmp", "bind-rw /home/u <- " + ph, "bind-rw /srv/ws"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := policy.Policy{Workspace: tt.ws, Home: "/home/u", PrivateHome: ph,
				Grants: append([]policy.Grant{{Path: tt.ws, Writable: true, Dir: true}}, tt.grants...)}
			if diff := cmp.Diff(tt.want, opStrings(planStatic(&p, fs).ops)); diff != "" {
				t.Errorf("ops (-want +got):\n%s", diff)
			}
		})
	}
}
