package policy

import (
	"errors"
	"strings"
	"testing"
)

// all names every protection the sandbox without namespaces gives up.
var all = ProtectionNames()

// TestReducedRefusals: without namespaces, what cannot be kept is refused
// at start, naming the flag that gives it up; what the mode cannot hold at
// all (a read-only path inside a writable one, the proxy) is refused too.
func TestReducedRefusals(t *testing.T) {
	root := tree(t)
	ws := root + "/home/proj"
	for _, tt := range []struct {
		name       string
		o          Options
		flag, want string
		hint       string
	}{
		{"nothing given up", Options{Workspace: ws, WithoutNamespaces: true}, "--without-namespaces", "cannot keep these protections:\n  git-carve-outs: ",
			"add --without-protection git-carve-outs,private-tmp,process-isolation,file-metadata"},
		{"one left", Options{Workspace: ws, WithoutNamespaces: true, Unprotected: all[1:]}, "--without-namespaces", "cannot keep this protection:\n  git-carve-outs: .git hooks and config",
			"add --without-protection git-carve-outs;"},
		{"unknown name", Options{Workspace: ws, WithoutNamespaces: true, Unprotected: []string{"network"}}, "--without-protection", "not a protection", "git-carve-outs, private-tmp"},
		{"without the mode", Options{Workspace: ws, Unprotected: []string{"private-tmp"}}, "--without-protection", "goes with --without-namespaces", "add --without-namespaces"},
		{"allow-net", Options{Workspace: ws, WithoutNamespaces: true, Unprotected: all, AllowNet: []string{"example.com"}}, "--allow-net", "own network namespace", "--host-network"},
		{"read-only inside writable", Options{Workspace: ws, WithoutNamespaces: true, Unprotected: all, ReadOnly: []string{ws + "/sub"}}, "--read-only", "lies inside the writable", "drop it"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.o)
			var fe *FlagError
			if !errors.As(err, &fe) {
				t.Fatalf("got %v, want a *FlagError", err)
			}
			if fe.Flag != tt.flag || !strings.Contains(fe.Error(), tt.want) || !strings.Contains(fe.Hint, tt.hint) {
				t.Errorf("got %s\nhint %q\nwant %s ... %q, hint with %q", fe.Error(), fe.Hint, tt.flag, tt.want, tt.hint)
			}
		})
	}
}

// TestReducedPolicy: with every protection given up, the policy runs
// without namespaces, HOME is the private home at its own path, and the
// description says what is weaker.
func TestReducedPolicy(t *testing.T) {
	root := tree(t)
	p, err := New(Options{Workspace: root + "/home/proj", Home: root + "/home", StateDir: root + "/state", WithoutNamespaces: true, Unprotected: all, HostNetwork: true,
		Limits: Limits{TmpBytes: 1 << 30, MemoryBytes: 1 << 30}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Discard()
	if !p.WithoutNamespaces || p.SandboxHome() != p.PrivateHome || p.PrivateHome == "" {
		t.Errorf("got without=%v HOME %q, private home %q", p.WithoutNamespaces, p.SandboxHome(), p.PrivateHome)
	}
	d := p.Describe()
	for _, want := range []string{"$TMPDIR, a private directory fresh for each call", "runs without namespaces", ".git hooks and config are writable while a call runs",
		"see the host's processes", "mode, timestamps", "the host's, open to every host and port", "1 GiB memory"} {
		if !strings.Contains(d, want) {
			t.Errorf("description lacks %q:\n%s", want, d)
		}
	}
	for _, lack := range []string{"private /tmp", "/tmp.", "GiB /tmp", ".git hooks and config are read-only"} {
		if strings.Contains(d, lack) {
			t.Errorf("description has %q:\n%s", lack, d)
		}
	}
	p2, err := New(Options{Workspace: root + "/home/proj", WithoutNamespaces: true, Unprotected: all})
	if err != nil {
		t.Fatal(err)
	}
	if d := p2.Describe(); !strings.Contains(d, "No network: commands cannot open internet sockets") {
		t.Errorf("network off: %s", d)
	}
	if got := p2.DescribeNetwork(); !strings.HasPrefix(got, "none: no internet sockets") {
		t.Errorf("DescribeNetwork: %q", got)
	}
}
