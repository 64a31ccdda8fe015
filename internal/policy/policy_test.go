package policy

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// tree makes a small filesystem: a home with a project, a file and a
// symlink to the project.
func tree(t *testing.T) (root string) {
	t.Helper()
	root = t.TempDir()
	root, _ = filepath.EvalSymlinks(root)
	for _, d := range []string{"home/proj/sub", "home/other", "data"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(root, "home/file.txt"), []byte("x"), 0o644)
	os.Symlink(filepath.Join(root, "home/proj"), filepath.Join(root, "link"))
	return root
}

func TestNewFlagErrors(t *testing.T) {
	root := tree(t)
	for _, tt := range []struct {
		name string
		o    Options
		flag string
		want string
	}{
		{"no workspace", Options{}, "--workspace", "is required"},
		{"missing workspace", Options{Workspace: root + "/nope"}, "--workspace", "no such file or directory"},
		{"workspace is a file", Options{Workspace: root + "/home/file.txt"}, "--workspace", "not a directory"},
		{"workspace is root", Options{Workspace: "/"}, "--workspace", "root directory"},
		{"missing writable", Options{Workspace: root + "/home/proj", Writable: []string{root + "/nope"}}, "--writable", "no such file"},
		{"writable root", Options{Workspace: root + "/home/proj", Writable: []string{"/"}}, "--writable", "root directory"},
		{"missing read-only", Options{Workspace: root + "/home/proj", ReadOnly: []string{root + "/nope"}}, "--read-only", "no such file"},
		{"both read-only and writable", Options{Workspace: root + "/home/proj", Writable: []string{root + "/data"}, ReadOnly: []string{root + "/data"}}, "--read-only", "also given as --writable"},
		{"read-only workspace", Options{Workspace: root + "/home/proj", ReadOnly: []string{root + "/link"}}, "--read-only", "also given as --workspace"},
		{"negative timeout", Options{Workspace: root + "/home/proj", Timeout: -time.Second}, "--timeout", "must be positive"},
		{"tiny output", Options{Workspace: root + "/home/proj", MaxOutputBytes: 10}, "--max-output", "out of range"},
		{"huge output", Options{Workspace: root + "/home/proj", MaxOutputBytes: 1 << 30}, "--max-output", "out of range"},
		{"no concurrency", Options{Workspace: root + "/home/proj", MaxConcurrent: -1}, "--max-concurrent", "out of range"},
		{"bad env name", Options{Workspace: root + "/home/proj", Env: []string{"1X=2"}}, "--env", "not a variable name"},
		{"empty env name", Options{Workspace: root + "/home/proj", Env: []string{"=2"}}, "--env", "not a variable name"},
		{"reserved env", Options{Workspace: root + "/home/proj", Env: []string{"_NANOSANDBOX_CHILD=x"}}, "--env", "reserved"},
		{"unset env", Options{Workspace: root + "/home/proj", Env: []string{"NOT_SET_HERE"}}, "--env", "not set in the server's environment"},
		{"proxy env", Options{Workspace: root + "/home/proj", Env: []string{"HTTPS_PROXY=http://proxy.example:8080"}}, "--env", "set by the sandbox"},
		{"no_proxy env", Options{Workspace: root + "/home/proj", Env: []string{"no_proxy=*"}, AllowNet: []string{"example.com"}}, "--env", "set by the sandbox"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.o)
			var fe *FlagError
			if !errors.As(err, &fe) {
				t.Fatalf("got %v, want a *FlagError", err)
			}
			if fe.Flag != tt.flag || !strings.Contains(fe.Error(), tt.want) || fe.Hint == "" {
				t.Errorf("got %s (hint %q), want %s ... %q with a hint", fe.Error(), fe.Hint, tt.flag, tt.want)
			}
		})
	}
}

func TestNewResolvesGrants(t *testing.T) {
	root := tree(t)
	p, err := New(Options{
		Workspace: root + "/link", // a symlink to home/proj
		Writable:  []string{root + "/data", root + "/data/"},
		ReadOnly:  []string{root + "/home/proj/sub", root + "/home/file.txt"},
		Home:      root + "/home",
		StateDir:  root + "/state",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []Grant{
		{Path: root + "/home/proj", Writable: true, Dir: true, Flag: "--workspace"},
		{Path: root + "/data", Writable: true, Dir: true, Flag: "--writable"},
		{Path: root + "/home/proj/sub", Dir: true, Flag: "--read-only"},
		{Path: root + "/home/file.txt", Flag: "--read-only"},
	}
	if diff := cmp.Diff(want, p.Grants); diff != "" {
		t.Errorf("grants (-want +got):\n%s", diff)
	}
	if p.Workspace != root+"/home/proj" || p.Home != root+"/home" || p.HomeGranted {
		t.Errorf("got workspace %q home %q granted %v", p.Workspace, p.Home, p.HomeGranted)
	}
	if !strings.HasPrefix(p.PrivateHome, root+"/state/homes/proj-") {
		t.Errorf("got private home %q", p.PrivateHome)
	}
	if fi, err := os.Stat(p.PrivateHome); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("private home not created 0700: %v %v", fi, err)
	}
	if p.SandboxHome() != root+"/home" {
		t.Errorf("got HOME %q, want the home path backed by the private home", p.SandboxHome())
	}
	if p.Timeout != DefaultTimeout || p.MaxOutputBytes != DefaultMaxOutputBytes || p.MaxConcurrent != DefaultMaxConcurrent {
		t.Errorf("defaults: got %v %v %v", p.Timeout, p.MaxOutputBytes, p.MaxConcurrent)
	}
}

func TestHomeGrantedReadOnly(t *testing.T) {
	root := tree(t)
	p, err := New(Options{Workspace: root + "/data", ReadOnly: []string{root + "/home"}, Home: root + "/home", StateDir: root + "/state"})
	if err != nil {
		t.Fatal(err)
	}
	if !p.HomeGranted || p.PrivateHome != "" || p.SandboxHome() != root+"/home" {
		t.Errorf("got granted %v private %q HOME %q", p.HomeGranted, p.PrivateHome, p.SandboxHome())
	}
}

// TestWritableHomeRefused: a writable grant over the home would let
// commands write what the user's shell and git run later.
func TestWritableHomeRefused(t *testing.T) {
	root := tree(t)
	if err := os.Symlink(root+"/home", root+"/homelink"); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		o    Options
		flag string
		want string
	}{
		{"workspace is the home", Options{Workspace: root + "/home"}, "--workspace", `--workspace "` + root + `/home": is your home directory`},
		{"workspace above the home", Options{Workspace: root}, "--workspace", "contains your home directory " + root + "/home"},
		{"workspace through a symlink", Options{Workspace: root + "/homelink"}, "--workspace", `--workspace "` + root + `/homelink": is your home directory`},
		{"writable home", Options{Workspace: root + "/data", Writable: []string{root + "/home/"}}, "--writable", `--writable "` + root + `/home/": is your home directory`},
		{"writable above the home", Options{Workspace: root + "/data", Writable: []string{root}}, "--writable", "contains your home directory"},
		{"the account's home", Options{Workspace: root + "/home", Home: root + "/data", AccountHome: root + "/home/"}, "--workspace", "is your home directory"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.o.Home == "" {
				tt.o.Home = root + "/home"
			}
			tt.o.StateDir = root + "/state"
			_, err := New(tt.o)
			var fe *FlagError
			if !errors.As(err, &fe) || fe.Flag != tt.flag || !strings.Contains(fe.Error(), tt.want) || !strings.Contains(fe.Hint, "--read-only") {
				t.Fatalf("got %v, want %s refused: %q, with a hint", err, tt.flag, tt.want)
			}
		})
	}
	// Inside the home, and read-only over it, are what the hint offers.
	for _, o := range []Options{
		{Workspace: root + "/home/proj", Writable: []string{root + "/home/other"}},
		{Workspace: root + "/data", ReadOnly: []string{root}},
	} {
		o.Home, o.StateDir = root+"/home", root+"/state"
		if _, err := New(o); err != nil {
			t.Errorf("%+v: %v", o, err)
		}
	}
}

func TestPrivateHomeInsideWritableRefused(t *testing.T) {
	root := tree(t)
	_, err := New(Options{Workspace: root + "/home/proj", Writable: []string{root + "/data"}, Home: root + "/home", StateDir: root + "/data/state"})
	var fe *FlagError
	if !errors.As(err, &fe) || !strings.Contains(fe.Err, "private home") {
		t.Fatalf("got %v, want a refusal naming the private home", err)
	}
}

// TestStateDirInsideWritableRefused: with a --read-only home there is no
// private home, and a writable grant that holds the state directory would
// still let commands write every workspace's private home.
func TestStateDirInsideWritableRefused(t *testing.T) {
	root := tree(t)
	if err := os.Symlink(root+"/data", root+"/datalink"); err != nil {
		t.Fatal(err)
	}
	_, err := New(Options{Workspace: root + "/data", ReadOnly: []string{root + "/home"}, Home: root + "/home", StateDir: root + "/datalink/cache/nanosandbox-mcp"})
	var fe *FlagError
	if !errors.As(err, &fe) || fe.Flag != "--workspace" || !strings.Contains(fe.Err, "state directory "+root+"/data/cache/nanosandbox-mcp") || fe.Hint == "" {
		t.Fatalf("got %v, want a refusal naming the state directory, resolved", err)
	}
	p, err := New(Options{Workspace: root + "/data", ReadOnly: []string{root + "/home"}, Home: root + "/home", StateDir: root + "/link/state/nanosandbox-mcp"})
	if err != nil {
		t.Fatal(err)
	}
	if want := root + "/home/proj/state/nanosandbox-mcp"; p.StateDir != want {
		t.Errorf("StateDir %q, want %q (resolved as far as it exists)", p.StateDir, want)
	}
}

func TestEnv(t *testing.T) {
	root := tree(t)
	p, err := New(Options{
		Workspace: root + "/home/proj",
		HostEnv:   []string{"PATH=/opt/bin:/usr/bin", "LANG=C.UTF-8", "LC_ALL=C", "OPENAI_API_KEY=sk-secret", "FOO=from-host", "SSH_AUTH_SOCK=/tmp/agent"},
		Env:       []string{"FOO", "BAR=given", "PATH=/only"},
		User:      "alice",
		GitName:   "Alice",
		GitEmail:  "alice@example.com",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"BAR=given",
		"FOO=from-host",
		"GIT_AUTHOR_EMAIL=alice@example.com",
		"GIT_AUTHOR_NAME=Alice",
		"GIT_COMMITTER_EMAIL=alice@example.com",
		"GIT_COMMITTER_NAME=Alice",
		"HOME=/tmp",
		"LANG=C.UTF-8",
		"LC_ALL=C",
		"LOGNAME=alice",
		"NO_UPDATE_NOTIFIER=1",
		"PATH=/only",
		"PIP_DISABLE_PIP_VERSION_CHECK=1",
		"PIP_RETRIES=1",
		"PWD=" + root + "/home/proj",
		"TERM=dumb",
		"TMPDIR=/tmp",
		"USER=alice",
		"npm_config_update_notifier=false",
	}
	if diff := cmp.Diff(want, p.Env()); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
}

// TestEnvNetwork: with the host's network, --env may name a proxy and pip
// keeps its retries; otherwise --env may set PIP_RETRIES.
func TestEnvNetwork(t *testing.T) {
	root := tree(t)
	for _, tt := range []struct {
		name string
		o    Options
		want []string // of the variables named in it
	}{
		{"own network", Options{}, []string{"PIP_RETRIES=1"}},
		{"PIP_RETRIES given", Options{Env: []string{"PIP_RETRIES=3"}}, []string{"PIP_RETRIES=3"}},
		{"host network", Options{HostNetwork: true, Env: []string{"HTTPS_PROXY=http://proxy.example:8080", "NO_PROXY=.example"}}, []string{"HTTPS_PROXY=http://proxy.example:8080", "NO_PROXY=.example"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.o.Workspace = root + "/home/proj"
			p, err := New(tt.o)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, kv := range p.Env() {
				if name, _, _ := strings.Cut(kv, "="); name == "PIP_RETRIES" || isProxyVariable(name) {
					got = append(got, kv)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("env (-want +got):\n%s", diff)
			}
		})
	}
}

func TestProxyEnv(t *testing.T) {
	want := []string{
		"HTTP_PROXY=http://127.0.0.1:3128", "HTTPS_PROXY=http://127.0.0.1:3128", "ALL_PROXY=http://127.0.0.1:3128",
		"http_proxy=http://127.0.0.1:3128", "https_proxy=http://127.0.0.1:3128", "all_proxy=http://127.0.0.1:3128",
		"NO_PROXY=localhost,127.0.0.1,::1", "no_proxy=localhost,127.0.0.1,::1",
	}
	if diff := cmp.Diff(want, ProxyEnv("http://127.0.0.1:3128")); diff != "" {
		t.Errorf("ProxyEnv (-want +got):\n%s", diff)
	}
}

func TestCheck(t *testing.T) {
	p := &Policy{}
	for _, tt := range []struct {
		name    string
		command string
		args    []string
		stdin   string
		refused string
	}{
		{"plain", "ls", []string{"-la"}, "", ""},
		{"empty", "", nil, "", "command is empty"},
		{"NUL in command", "l\x00s", nil, "", "command contains a NUL byte"},
		{"NUL in arg", "echo", []string{"ok", "a\x00b"}, "", "args[1] contains a NUL byte"},
		{"NUL in stdin is data", "cat", nil, "a\x00b", ""},
		{"too big", "cat", nil, strings.Repeat("x", MaxArgBytes), "over the"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := p.Check(tt.command, tt.args, tt.stdin)
			if tt.refused == "" {
				if err != nil {
					t.Fatalf("got %v, want allowed", err)
				}
				return
			}
			var d *Denial
			if !errors.As(err, &d) || !strings.Contains(d.Reason, tt.refused) || !strings.HasPrefix(err.Error(), "refused: ") {
				t.Fatalf("got %v, want a denial about %q", err, tt.refused)
			}
		})
	}
}

func TestParseSize(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int64
		bad  bool
	}{
		{in: "0", want: 0},
		{in: "512", want: 512},
		{in: "512B", want: 512},
		{in: "16KiB", want: 16 << 10},
		{in: "16k", want: 16 << 10},
		{in: "16 KB", want: 16000}, // decimal, as in GNU coreutils
		{in: "4GB", want: 4e9},
		{in: "4gb", want: 4e9},
		{in: "1.5MB", want: 1500000},
		{in: "2TB", want: 2e12},
		{in: "4GiB", want: 4 << 30},
		{in: "3M", want: 3 << 20},
		{in: "1.5MiB", want: 3 << 19},
		{in: "2G", want: 2 << 30},
		{in: "1TiB", want: 1 << 40},
		{in: "", bad: true},
		{in: "KiB", bad: true},
		{in: "12 parsecs", bad: true},
		{in: "-1", bad: true},
		{in: "1.2.3", bad: true},
		{in: "99999999999TiB", bad: true},
	} {
		got, err := ParseSize(tt.in)
		if tt.bad != (err != nil) || !tt.bad && got != tt.want {
			t.Errorf("ParseSize(%q): got %d, %v; want %d (error %v)", tt.in, got, err, tt.want, tt.bad)
		}
	}
	for _, n := range []int64{0, 1, 1023, 1024, 16 << 10, 1536, 3 << 19, 5 << 30, 4e9, 1.5e9, 512e6, 1234e6, 16000, 1e12} {
		back, err := ParseSize(FormatSize(n))
		if err != nil || back != n && (n%1024 == 0 || n%100 == 0) {
			t.Errorf("FormatSize(%d) = %q, read back as %d, %v", n, FormatSize(n), back, err)
		}
	}
	for n, want := range map[int64]string{4 << 30: "4 GiB", 4e9: "4 GB", 1.5e9: "1.5 GB", 512e6: "512 MB", 1234e6: "1234 MB", 1536: "1.5 KiB", 100: "100 B", 256 << 10: "256 KiB"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestDescribe(t *testing.T) {
	root := tree(t)
	p, err := New(Options{Workspace: root + "/home/proj", Writable: []string{root + "/data"}, ReadOnly: []string{root + "/home/other"}})
	if err != nil {
		t.Fatal(err)
	}
	d := p.Describe()
	for _, want := range []string{root + "/home/proj", root + "/data", root + "/home/other", "No network", "50s", "16 KiB", "sh"} {
		if !strings.Contains(d, want) {
			t.Errorf("description lacks %q:\n%s", want, d)
		}
	}
	if n := strings.Count(d, "\n"); n > 3 {
		t.Errorf("description has %d lines, want a few:\n%s", n+1, d)
	}
}

func TestWithin(t *testing.T) {
	for _, tt := range []struct {
		path, dir string
		want      bool
	}{
		{"/a/b", "/a", true},
		{"/a", "/a", true},
		{"/ab", "/a", false},
		{"/a", "/a/b", false},
		{"/x", "/", true},
	} {
		if got := Within(tt.path, tt.dir); got != tt.want {
			t.Errorf("Within(%q, %q): got %v, want %v", tt.path, tt.dir, got, tt.want)
		}
	}
}

func TestHomesRecordPruneAndDiscard(t *testing.T) {
	root := t.TempDir()
	state := root + "/state"
	for _, d := range []string{"/home/a", "/home/b"} {
		os.MkdirAll(root+d, 0o755)
	}
	pa, err := New(Options{Workspace: root + "/home/a", Home: root + "/home", StateDir: state, Writable: nil})
	if err != nil {
		t.Fatal(err)
	}
	pb, err := New(Options{Workspace: root + "/home/b", Home: root + "/home", StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(pb.PrivateHome+"/cache", []byte("12345"), 0o644)
	os.MkdirAll(pb.PrivateHome+"/go/pkg/mod/x", 0o755)
	os.Chmod(pb.PrivateHome+"/go/pkg/mod/x", 0o555) // as Go's module cache leaves it
	os.Chmod(pb.PrivateHome+"/go/pkg/mod", 0o555)
	homes, err := Homes(state)
	if err != nil || len(homes) != 2 {
		t.Fatalf("homes: %v %+v", err, homes)
	}
	os.RemoveAll(root + "/home/b")
	removed, err := HomesPrune(state)
	if err != nil || len(removed) != 1 || removed[0].Dir != pb.PrivateHome || removed[0].Bytes != 5 {
		t.Fatalf("prune: %v %+v", err, removed)
	}
	if _, err := os.Stat(pb.PrivateHome); err == nil {
		t.Error("the orphan home is still there")
	}
	if _, err := os.Stat(pa.PrivateHome); err != nil {
		t.Errorf("the live home went: %v", err)
	}
	// A start that fails removes the home it made, and only that.
	os.MkdirAll(root+"/home/c", 0o755)
	pc, err := New(Options{Workspace: root + "/home/c", Home: root + "/home", StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	pc.Discard()
	if _, err := os.Stat(pc.PrivateHome); err == nil {
		t.Error("a failed start left its new private home")
	}
	pa2, _ := New(Options{Workspace: root + "/home/a", Home: root + "/home", StateDir: state})
	pa2.Discard()
	if _, err := os.Stat(pa.PrivateHome); err != nil {
		t.Errorf("discarding a start removed a home it did not make: %v", err)
	}
}

func TestHomeToolDirs(t *testing.T) {
	h := t.TempDir()
	for _, d := range []string{".pyenv/shims", ".pyenv/versions", ".cargo/bin", ".rustup/toolchains", ".local/bin", "own/bin", ".ssh/bin"} {
		os.MkdirAll(filepath.Join(h, d), 0o755)
	}
	os.Symlink(filepath.Join(h, "own/bin"), filepath.Join(h, "linked"))
	path := strings.Join([]string{h + "/.pyenv/shims", h + "/.cargo/bin", h + "/linked", h + "/.ssh/bin", h, h + "/missing", "relative/bin", "/usr/bin", h + "/.local/bin"}, ":")
	var got []string
	for _, tl := range homeToolDirs(path, h, nil, "") {
		got = append(got, strings.TrimPrefix(tl.Path, h+"/"))
	}
	want := []string{".pyenv", ".cargo/bin", ".rustup", "own/bin", ".local/bin"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("got %v, want %v (never the home, a credential path, a missing or relative one)", got, want)
	}
}

// TestHostProgram: a program the server runs on the host is never one
// from a path commands can write, however the PATH reaches it.
func TestHostProgram(t *testing.T) {
	real, err := filepath.EvalSymlinks("/bin/sh")
	if err != nil {
		t.Skip("needs /bin/sh")
	}
	root := tree(t)
	ws, data, state := root+"/home/proj", root+"/data", root+"/state"
	plant := func(dir string) string {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "sh"), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	// A directory outside the writable paths whose program links into
	// the workspace, and one in the workspace whose program links out.
	outside := root + "/home/other/bin"
	os.MkdirAll(outside, 0o755)
	os.Symlink(filepath.Join(plant(ws+"/.venv/bin"), "sh"), filepath.Join(outside, "sh"))
	linkOut := ws + "/linked"
	os.MkdirAll(linkOut, 0o755)
	os.Symlink("/bin/sh", filepath.Join(linkOut, "sh"))
	os.Symlink(ws+"/.venv/bin", root+"/venvlink")
	tmp := plant(root + "/tmp/nsb-call-1")
	for _, tt := range []struct {
		name, path, want string
	}{
		{"temporary directory", tmp + ":/bin", real},
		{"workspace", ws + "/.venv/bin:/bin", real},
		{"writable", plant(data+"/bin") + ":/bin", real},
		{"state directory", plant(state+"/homes/other-0123/.local/bin") + ":/bin", real},
		{"symlinked directory", root + "/venvlink:/bin", real},
		{"symlinked program", outside + ":/bin", real},
		{"relative", ".venv/bin:/bin", real},
		{"link out of the workspace", linkOut, real},
		{"only planted", ws + "/.venv/bin:" + data + "/bin", ""},
		// Another server's workspace, or anything else outside the
		// system's places: its commands may have written it.
		{"another server's workspace", plant(root+"/home/tools/bin") + ":/bin", real},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// Not the test's /tmp, which holds everything here.
			t.Setenv("TMPDIR", root+"/tmp")
			p, err := New(Options{Workspace: ws, Writable: []string{data}, StateDir: state, HostEnv: []string{"PATH=" + tt.path}})
			if err != nil {
				t.Fatal(err)
			}
			for range 2 { // found, then remembered
				if got := p.HostProgram("sh"); got != tt.want {
					t.Errorf("got %q, want %q", got, tt.want)
				}
			}
		})
	}
	// What was found is remembered for the same writable paths only.
	t.Setenv("TMPDIR", root+"/tmp")
	p, err := New(Options{Workspace: ws, StateDir: state, HostEnv: []string{"PATH=/bin"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.HostProgram("sh"); got != real {
		t.Fatalf("got %q, want %q", got, real)
	}
	p.Grants = append(p.Grants, Grant{Path: filepath.Dir(real), Writable: true, Dir: true})
	if got := p.HostProgram("sh"); got != "" {
		t.Errorf("with %s writable: got %q, want none", filepath.Dir(real), got)
	}
}

// TestHostGitFlag: --host-git names a git of the user's own, which must be
// an executable file commands cannot write.
func TestHostGitFlag(t *testing.T) {
	root := tree(t)
	t.Setenv("TMPDIR", root+"/tmp") // not the test's /tmp, which holds everything here
	ws := root + "/home/proj"
	own := root + "/home/brew/bin"
	os.MkdirAll(own, 0o755)
	os.WriteFile(own+"/git", []byte("#!/bin/sh\n"), 0o755)
	os.WriteFile(ws+"/git", []byte("#!/bin/sh\n"), 0o755)
	for _, tt := range []struct{ name, flag, err string }{
		{"the user's own", own + "/git", ""},
		{"relative", "bin/git", "not an absolute path"},
		{"missing", own + "/nothing", "no such file"},
		{"in the workspace", ws + "/git", "which commands can write"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(Options{Workspace: ws, HostGit: tt.flag})
			switch {
			case tt.err == "" && err != nil:
				t.Fatal(err)
			case tt.err == "" && p.HostProgram("git") != own+"/git":
				t.Errorf("HostProgram(git) = %q, want the flag's", p.HostProgram("git"))
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Errorf("err %v, want one holding %q", err, tt.err)
			}
		})
	}
}

// TestWritableSystemPlaceRefused: no writable grant lies in the system's
// places for programs, where every server takes what it runs on the host.
func TestWritableSystemPlaceRefused(t *testing.T) {
	root := tree(t)
	if _, err := os.Stat("/usr/local"); err != nil {
		t.Skip("needs /usr/local")
	}
	_, err := New(Options{Workspace: root + "/home/proj", Writable: []string{"/usr/local"}})
	if err == nil || !strings.Contains(err.Error(), "where the server takes the programs it runs on the host") {
		t.Errorf("--writable /usr/local: %v", err)
	}
}

// TestRecordHomeLastUsed checks that every start marks its private home as
// used now, whether its record already named the workspace (its time is
// set) or not (it is rewritten), and names the workspace after.
func TestRecordHomeLastUsed(t *testing.T) {
	home := t.TempDir() + "/ws-1"
	old := time.Now().Add(-48 * time.Hour)
	for _, was := range []string{"/w\n", "/elsewhere\n", ""} {
		rec := homeRecord(home)
		os.Remove(rec)
		if was != "" {
			os.WriteFile(rec, []byte(was), 0o600)
			os.Chtimes(rec, old, old)
		}
		recordHome(home, "/w")
		b, err := os.ReadFile(rec)
		if err != nil || string(b) != "/w\n" {
			t.Errorf("record was %q: now %q, %v; want \"/w\\n\"", was, b, err)
		}
		if fi, err := os.Stat(rec); err != nil || time.Since(fi.ModTime()) > time.Hour {
			t.Errorf("record was %q: its time is not now (%v)", was, err)
		}
	}
}

// TestWritableByCommands: where commands write on the host, as the
// --log-file check needs it: the writable grants, the private home, the
// server's state, and the calls' TMPDIRs only where they are on the host.
func TestWritableByCommands(t *testing.T) {
	root := tree(t)
	os.Symlink(root+"/data", root+"/datalink")
	p, err := New(Options{Workspace: root + "/home/proj", Writable: []string{root + "/datalink"}, Home: root + "/home", StateDir: root + "/state"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{root + "/home/proj", root + "/data", p.PrivateHome, root + "/state"}
	tmp := resolveExisting(os.TempDir())
	if runtime.GOOS == "darwin" {
		want = append(want, filepath.Clean(os.TempDir()))
		if tmp != filepath.Clean(os.TempDir()) {
			want = append(want, tmp)
		}
	}
	if diff := cmp.Diff(want, p.WritableByCommands()); diff != "" {
		t.Errorf("with namespaces (-want +got):\n%s", diff)
	}
	if runtime.GOOS == "darwin" {
		return
	}
	if p.CallTmp() != "" {
		t.Errorf("with namespaces the calls' TMPDIR is at %q on the host", p.CallTmp())
	}
	p.WithoutNamespaces = true
	if got := p.CallTmp(); got != root+"/state/tmp" {
		t.Errorf("without namespaces the calls' TMPDIRs are in %q, want the state's tmp", got)
	}
	if got := p.WritableByCommands(); !slices.Contains(got, root+"/state/tmp") {
		t.Errorf("without namespaces: %q", got)
	}
	p.StateDir = ""
	if got := p.CallTmp(); got != os.TempDir() {
		t.Errorf("without namespaces and state the calls' TMPDIRs are in %q, want %q", got, os.TempDir())
	}
	if got := p.WritableByCommands(); !slices.Contains(got, tmp) {
		t.Errorf("without namespaces and state: %q lacks %s", got, tmp)
	}
}
