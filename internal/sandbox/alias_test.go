package sandbox

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
)

func TestParseMountinfo(t *testing.T) {
	in := `22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw
40 27 254:0 /home/u /mnt/my\040home rw,relatime shared:1 - ext4 /dev/vda rw
41 27 0:40 /@home /home rw - btrfs /dev/sdb rw,subvol=/@home
bad line
42 27 0:41 relative /x rw - tmpfs tmpfs rw
`
	want := []mountEntry{
		{ID: 22, Dev: "0:21", Root: "/", Point: "/proc"},
		{ID: 27, Dev: "254:0", Root: "/", Point: "/"},
		{ID: 40, Dev: "254:0", Root: "/home/u", Point: "/mnt/my home"},
		{ID: 41, Dev: "0:40", Root: "/@home", Point: "/home"},
	}
	if diff := cmp.Diff(want, parseMountinfo([]byte(in))); diff != "" {
		t.Errorf("mounts (-want +got):\n%s", diff)
	}
}

func TestAliasCandidates(t *testing.T) {
	mounts := []mountEntry{
		{ID: 1, Dev: "8:1", Root: "/", Point: "/"},
		{ID: 2, Dev: "8:2", Root: "/@home", Point: "/home"},        // btrfs subvolume
		{ID: 3, Dev: "8:2", Root: "/", Point: "/mnt/pool"},         // the whole pool again
		{ID: 4, Dev: "8:2", Root: "/@home/u", Point: "/srv/u"},     // a bind of the home
		{ID: 5, Dev: "8:2", Root: "/@home/u/.ssh", Point: "/keys"}, // a bind of a part of it
		{ID: 6, Dev: "8:2", Root: "/@home/other", Point: "/o"},     // someone else's home
		{ID: 7, Dev: "8:1", Root: "/", Point: "/mnt/root"},         // the root filesystem again
		{ID: 8, Dev: "0:50", Root: "/", Point: "/tmp"},
	}
	for _, tt := range []struct {
		path  string
		mount int
		want  []aliasCandidate
	}{
		{"/home/u", 2, []aliasCandidate{
			{Path: "/mnt/pool/@home/u", Mount: 3},
			{Path: "/srv/u", Mount: 4},
			{Path: "/keys", Mount: 5, Part: true},
		}},
		{"/home/u/.ssh", 2, []aliasCandidate{
			{Path: "/mnt/pool/@home/u/.ssh", Mount: 3},
			{Path: "/srv/u/.ssh", Mount: 4},
			{Path: "/keys", Mount: 5},
		}},
		{"/etc/shadow", 1, []aliasCandidate{{Path: "/mnt/root/etc/shadow", Mount: 7}}},
		{"/tmp", 8, nil},
		{"/home/u", 99, nil}, // an unknown mount
		{"/elsewhere", 2, nil},
	} {
		t.Run(tt.path, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, aliasCandidates(mounts, tt.path, tt.mount)); diff != "" {
				t.Errorf("candidates (-want +got):\n%s", diff)
			}
		})
	}
}

// aliasFS is a fakeFS that also says where other mounts show paths.
type aliasFS struct {
	*fakeFS
	aliases map[string][]alias
}

func (a aliasFS) Aliases(paths []string) map[string][]alias {
	out := map[string][]alias{}
	for _, p := range paths {
		if v, ok := a.aliases[p]; ok {
			out[p] = v
		}
	}
	return out
}

func TestPlanStaticHidesAliases(t *testing.T) {
	fs := aliasFS{
		fakeFS: newFakeFS("/tmp/", "/run/", "/etc/shadow", "/home/u/proj/", "/home/u/.ssh/id_rsa", "/home/u/docs/",
			"/srv/u/", "/srv/u/docs/", "/keys/", "/media/ssh/", "/mnt/root/tmp/", "/mnt/root/etc/shadow", "/ws/u/"),
		aliases: map[string][]alias{
			"/home/u":      {{Path: "/srv/u"}, {Path: "/keys", Part: true}, {Path: "/ws/u"}},
			"/home/u/.ssh": {{Path: "/srv/u/.ssh"}, {Path: "/keys"}, {Path: "/media/ssh"}},
			"/tmp":         {{Path: "/mnt/root/tmp"}},
			"/etc/shadow":  {{Path: "/mnt/root/etc/shadow"}},
		},
	}
	p := &policy.Policy{
		Workspace: "/home/u/proj",
		Home:      "/home/u",
		Grants: []policy.Grant{
			{Path: "/home/u/proj", Writable: true, Dir: true},
			{Path: "/srv/u/docs", Dir: true}, // read-only, through the other mount: shown as asked
			{Path: "/ws/u", Dir: true},       // read-only, the other mount itself: the host view shows it so
		},
	}
	sp := planStatic(p, fs)
	want := []string{
		"tmpfs /tmp",
		"tmpfs /run",
		"hide /keys",
		"hide /home/u",
		"hide /srv/u",
		"hide /media/ssh",
		"mask /etc/shadow",
		"hide /mnt/root/tmp",
		"bind-ro /srv/u/docs (make)",
		"bind-rw /home/u/proj (make)",
		"mask /mnt/root/etc/shadow",
	}
	if diff := cmp.Diff(want, opStrings(sp.ops)); diff != "" {
		t.Errorf("ops (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"/srv/u", "/ws/u"}, sp.homeAliases); diff != "" {
		t.Errorf("home aliases (-want +got):\n%s", diff)
	}
	// A writable grant over another mount of the home is refused; one
	// inside it is not.
	for _, tt := range []struct {
		grant string
		ok    bool
	}{{"/srv/u", false}, {"/srv", false}, {"/srv/u/docs", true}, {"/keys", true}} {
		pol := *p
		pol.Grants = append([]policy.Grant{{Path: tt.grant, Writable: true, Dir: true, Flag: "--writable"}}, p.Grants...)
		err := checkAliasGrants(&pol, sp.homeAliases)
		if got := err == nil; got != tt.ok {
			t.Errorf("--writable %s: got %v, want refused %v", tt.grant, err, !tt.ok)
		}
	}
}

// onceFS is a fakeFS on which no filesystem is mounted twice (onceFinder).
type onceFS struct{ *fakeFS }

func (onceFS) Aliases([]string) map[string][]alias { return map[string][]alias{} }
func (o onceFS) AliasesOnce(paths []string) (map[string][]alias, bool) {
	return o.Aliases(paths), true
}

// TestPlanStaticOnceMounted checks the shortcut of a host that mounts no
// filesystem twice: the same plan as where that is not known, with no
// alias looked for; a credential of a home the sandbox shows is still
// asked about and masked, and found when it appears later. Credentials
// inside the hidden home are asked about too: a symbolic link there may
// lead out of it (TestPlanStaticCredentialLinks).
func TestPlanStaticOnceMounted(t *testing.T) {
	paths := []string{"/tmp/", "/run/", "/etc/shadow", "/home/u/proj/", "/home/u/.ssh/id_rsa", "/home/v/.aws/credentials", "/home/v/notes"}
	p := &policy.Policy{
		Workspace: "/home/u/proj",
		Home:      "/home/u",
		Grants:    []policy.Grant{{Path: "/home/u/proj", Writable: true, Dir: true}},
	}
	plain := planStatic(p, newFakeFS(paths...))
	once := planStatic(p, onceFS{newFakeFS(paths...)})
	if diff := cmp.Diff(opStrings(plain.ops), opStrings(once.ops)); diff != "" {
		t.Errorf("ops (-not known +mounted once):\n%s", diff)
	}
	if !slices.Contains(opStrings(once.ops), "hide /home/v/.aws") {
		t.Errorf("another home's credential is not masked: %q", opStrings(once.ops))
	}
	later := onceFS{newFakeFS(append(paths, "/home/v/.netrc")...)}
	if !once.seen.changed(later) {
		t.Error("a credential made later in a shown home is not seen")
	}
}

// TestPlanStaticCredentialLinks checks credentials reached through a
// symbolic link (a dotfiles ~/.aws, a ~/.config elsewhere, a home that is
// a link): masked where the link leads, when the home's owner owns what
// is there, and never at a path through a link (the helper refuses to
// mount there, which failed every call of every user); a link to what
// another owns (a user's ~/.ssh to /usr) hides nothing; a link that is
// re-pointed is seen at the next call. Where nothing is mounted twice as
// where that is not known.
func TestPlanStaticCredentialLinks(t *testing.T) {
	build := func() *fakeFS {
		f := newFakeFS("/tmp/", "/usr/bin/", "/home/u/proj/", "/home/u/.aws@", "/home/u/dot/aws/credentials",
			"/home/u/.netrc@", "/srv/u/netrc", "/home/v/.config@", "/data/v/config/gh/hosts.yml",
			"/home/w/.ssh@", "/home/x@", "/data/x/.kube/config", "/home/y/.netrc@")
		f.links = map[string]string{
			"/home/u/.aws": "dot/aws", "/home/u/.netrc": "/srv/u/netrc", "/home/v/.config": "../../data/v/config",
			"/home/w/.ssh": "/usr", "/home/x": "/data/x", "/home/y/.netrc": "/home/y/.netrc",
		}
		f.owners = map[string]int{}
		for p := range f.entries {
			switch {
			case policy.Within(p, "/home/u"), policy.Within(p, "/srv/u"):
				f.owners[p] = 1000
			case policy.Within(p, "/home/v"), policy.Within(p, "/data/v"):
				f.owners[p] = 1001
			case policy.Within(p, "/home/w"):
				f.owners[p] = 1002
			case policy.Within(p, "/data/x"), policy.Within(p, "/home/y"):
				f.owners[p] = 1003
			}
		}
		return f
	}
	for _, tt := range []struct {
		name  string
		fsys  func(*fakeFS) fsInfo
		shown bool // --read-only ~
	}{
		{"hidden home", func(f *fakeFS) fsInfo { return f }, false},
		{"hidden home, mounted once", func(f *fakeFS) fsInfo { return onceFS{f} }, false},
		{"--read-only ~", func(f *fakeFS) fsInfo { return f }, true},
		{"--read-only ~, mounted once", func(f *fakeFS) fsInfo { return onceFS{f} }, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := &policy.Policy{
				Workspace: "/home/u/proj",
				Home:      "/home/u",
				Grants:    []policy.Grant{{Path: "/home/u/proj", Writable: true, Dir: true}},
			}
			if tt.shown {
				p.HomeGranted = true
				p.Grants = append(p.Grants, policy.Grant{Path: "/home/u", Dir: true})
			}
			f := build()
			sp := planStatic(p, tt.fsys(f))
			ops := opStrings(sp.ops)
			want := []string{"mask /srv/u/netrc", "hide /data/v/config/gh", "hide /data/x/.kube"}
			if tt.shown {
				want = append(want, "hide /home/u/dot/aws")
			}
			for _, w := range want {
				if !slices.Contains(ops, w) {
					t.Errorf("no %q in %q", w, ops)
				}
			}
			for _, o := range sp.ops {
				if real, ok := resolveHost(f, o.Path); !ok && o.Kind != opTmpfs && o.Kind != opHide || ok && real != o.Path {
					t.Errorf("%s: a mount through a link", opString(o))
				}
				if policy.Within(o.Path, "/usr") {
					t.Errorf("%s: another owner's tree hidden through a user's link", opString(o))
				}
			}
			f.links["/home/u/.netrc"] = "/srv/u/other"
			if !sp.seen.changed(tt.fsys(f)) {
				t.Error("a re-pointed credential link is not seen")
			}
		})
	}
}
