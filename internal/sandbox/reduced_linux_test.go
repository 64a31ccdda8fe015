package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
)

func TestReadableTrees(t *testing.T) {
	fsys := newFakeFS("/usr/bin/sh", "/etc/passwd", "/etc/shadow", "/etc/ssh/sshd_config", "/etc/ssh/ssh_host_ed25519_key",
		"/etc/ssl/", "/bin@", "/home/me/.ssh/id_ed25519", "/home/me/proj/", "/tmp/x", "/var/lib/", "/var/tmp/", "/opt/")
	hidden := []string{"/home", "/tmp", "/var/tmp", "/etc/shadow", "/etc/ssh/ssh_host_ed25519_key"}
	got := readableTrees("/", hidden, fsys)
	want := []string{"/etc/passwd", "/etc/ssh/sshd_config", "/etc/ssl", "/opt", "/usr", "/var/lib"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	if got := readableTrees("/home/me/proj", hidden, fsys); got != nil {
		t.Errorf("a tree inside a hidden one: got %v, want nothing", got)
	}
	if got := readableTrees("/usr", hidden, fsys); !slices.Equal(got, []string{"/usr"}) {
		t.Errorf("a tree with nothing hidden: got %v, want it whole", got)
	}
}

func TestReducedRules(t *testing.T) {
	fsys := newFakeFS("/usr/bin/", "/etc/passwd", "/etc/shadow", "/home/me/proj/a", "/home/me/.ssh/id", "/home/me/.pyenv/bin/",
		"/home/me/.cache/nanosandbox-mcp/homes/proj-1/", "/home/other/notes", "/root/", "/tmp/", "/run/", "/dev/null", "/proc/", "/srv/data/")
	p := &policy.Policy{
		Workspace: "/home/me/proj",
		Home:      "/home/me",
		Grants: []policy.Grant{
			{Path: "/home/me/proj", Writable: true, Dir: true, Flag: "--workspace"},
			{Path: "/home/me/.pyenv", Dir: true, Flag: "home tools"},
		},
		PrivateHome:       "/home/me/.cache/nanosandbox-mcp/homes/proj-1",
		StateDir:          "/home/me/.cache/nanosandbox-mcp",
		WithoutNamespaces: true,
	}
	r, err := reducedRules(p, fsys, 7)
	if err != nil {
		t.Fatal(err)
	}
	want := landlockRules{
		ReadOnly: []string{"/etc/passwd", "/proc", "/srv", "/usr", "/dev/random", "/dev/urandom", "/home/me/.pyenv"},
		Writable: []string{"/home/me/proj", "/home/me/.cache/nanosandbox-mcp/homes/proj-1"},
		Devices:  reducedDevices,
		NoTCP:    true,
	}
	if diff := cmp.Diff(want, r); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}

	// Below Landlock ABI 4 there are no TCP rules; with the host's
	// network there are none to add.
	if r, _ := reducedRules(p, fsys, 3); r.NoTCP {
		t.Errorf("ABI 3: TCP handled")
	}
	p.HostNetwork = true
	if r, _ := reducedRules(p, fsys, 7); r.NoTCP {
		t.Errorf("host network: TCP handled")
	}
	p.HostNetwork = false

	// A read-only grant of the home shows it, but for its credentials
	// and the server's state.
	p.Grants = append(p.Grants, policy.Grant{Path: "/home/me", Dir: true, Flag: "--read-only"})
	r, _ = reducedRules(p, fsys, 7)
	for _, hidden := range []string{"/home/me/.ssh", "/home/me/.cache", "/home/me"} {
		if slices.Contains(r.ReadOnly, hidden) {
			t.Errorf("a read-only home grants %s: %v", hidden, r.ReadOnly)
		}
	}
	if !slices.Contains(r.ReadOnly, "/home/me/proj") {
		t.Errorf("a read-only home: got %v, want its entries beside the hidden ones", r.ReadOnly)
	}

	// A writable grant holding what must stay hidden is refused.
	p.Grants = append(p.Grants[:1], policy.Grant{Path: "/home/me/.cache", Writable: true, Dir: true, Flag: "--writable"})
	_, err = reducedRules(p, fsys, 7)
	var fe *policy.FlagError
	if !errors.As(err, &fe) || fe.Flag != "--writable" {
		t.Errorf("a writable grant holding the server's state: got %v, want refused", err)
	}
}

func TestWithTmp(t *testing.T) {
	got := withTmp([]string{"HOME=/tmp", "PATH=/usr/bin", "TMPDIR=/tmp"}, "/s/tmp/call-1")
	want := []string{"HOME=/s/tmp/call-1", "PATH=/usr/bin", "TMPDIR=/s/tmp/call-1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	if got := withTmp([]string{"HOME=/h"}, "/t"); got[0] != "HOME=/h" {
		t.Errorf("a private home: got %v", got)
	}
}

// TestRemoveTmp: a call's TMPDIR goes, unreadable directories and all.
func TestRemoveTmp(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "call")
	if err := os.MkdirAll(filepath.Join(dir, "a/b"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "a/b/f"), []byte("x"), 0o644)
	os.Chmod(filepath.Join(dir, "a"), 0)
	removeTmp(dir)
	if _, err := os.Lstat(dir); err == nil {
		t.Errorf("%s left", dir)
	}
}
