package sandbox

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestAppArmorProfile(t *testing.T) {
	p := appArmorProfiles("/usr/local/bin/nanosandbox-mcp")
	if len(p) != 2 {
		t.Fatalf("got %d profiles, want 2", len(p))
	}
	want := "abi <abi/4.0>,\ninclude <tunables/global>\nprofile nanosandbox-mcp /usr/local/bin/nanosandbox-mcp flags=(unconfined) {\n  userns,\n}\n"
	if p[0].Text != want {
		t.Errorf("got\n%s\nwant\n%s", p[0].Text, want)
	}
	if p[1].Name != "nanosandbox-mcp-cached" || p[1].Attach != cachedAttach || !strings.Contains(p[1].Text, "profile nanosandbox-mcp-cached @{HOME}/") {
		t.Errorf("the cached copies' profile: %+v", p[1])
	}
	if got := appArmorProfiles(""); len(got) != 1 || got[0].Attach != cachedAttach {
		t.Errorf("without the binary's path: got %+v, want the cached copies' profile only", got)
	}
}

// TestAppArmorInstallCommand runs each install command with sudo, tee and
// apparmor_parser replaced, and checks that it writes the profile's text
// to its file in /etc/apparmor.d and loads it: one command, ready to paste.
func TestAppArmorInstallCommand(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("needs sh")
	}
	for _, exe := range []string{"/opt/nsb/nanosandbox-mcp", "/home/a b/it's [1]/nanosandbox-mcp"} {
		for _, p := range appArmorProfiles(exe) {
			dir := t.TempDir()
			script := `sudo() { "$@"; }
tee() { cat > "$DIR/written"; echo "$1" > "$DIR/file"; }
apparmor_parser() { echo "$@" > "$DIR/loaded"; }
` + p.Install
			cmd := exec.Command(sh, "-c", script)
			cmd.Env = []string{"DIR=" + dir, "PATH=/usr/bin:/bin"}
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s: %v: %s", p.Install, err, out)
			}
			read := func(name string) string {
				b, _ := exec.Command("cat", dir+"/"+name).Output()
				return string(b)
			}
			if got := read("written"); got != p.Text {
				t.Errorf("%s wrote\n%s\nwant\n%s", p.Install, got, p.Text)
			}
			file := "/etc/apparmor.d/" + p.Name
			if got := strings.TrimSpace(read("file")); got != file {
				t.Errorf("written to %q, want %q", got, file)
			}
			if got := strings.TrimSpace(read("loaded")); got != "-r "+file {
				t.Errorf("apparmor_parser %q, want -r %s", got, file)
			}
		}
	}
}

func TestAppArmorPath(t *testing.T) {
	for _, tt := range []struct{ path, want string }{
		{"/usr/local/bin/nanosandbox-mcp", "/usr/local/bin/nanosandbox-mcp"},
		{"/home/me/.local/bin/nanosandbox-mcp", "/home/me/.local/bin/nanosandbox-mcp"},
		{"/home/a b/nanosandbox-mcp", `"/home/a b/nanosandbox-mcp"`},
		{"/x/[1]*?{a,b}^@\"\\/n", `"/x/\[1\]\*\?\{a,b\}\^\@\"\\/n"`},
	} {
		if got := appArmorPath(tt.path); got != tt.want {
			t.Errorf("appArmorPath(%q): got %s, want %s", tt.path, got, tt.want)
		}
	}
}

// TestAppArmorFixOrder: a copy in npx's or uv's cache, whose path changes
// with each version, is offered the profile for cached copies first.
func TestAppArmorFixOrder(t *testing.T) {
	for _, tt := range []struct {
		exe   string
		first string
	}{
		{"/usr/local/bin/nanosandbox-mcp", "for /usr/local/bin/nanosandbox-mcp:"},
		{"/home/me/.npm/_npx/0123abcd/node_modules/nanosandbox-mcp-linux-x64/bin/nanosandbox-mcp", "for the copies npx and uvx keep"},
		{"/home/me/.cache/uv/archive-v0/Xy12/bin/nanosandbox-mcp", "for the copies npx and uvx keep"},
	} {
		fix := appArmorFix(tt.exe)
		lines := strings.Split(fix, "\n")
		if len(lines) < 3 || !strings.HasPrefix(strings.TrimSpace(lines[1]), tt.first) {
			t.Errorf("%s: got\n%s\nwant the first profile %q", tt.exe, fix, tt.first)
		}
		for _, want := range []string{"apparmor_parser -r /etc/apparmor.d/nanosandbox-mcp", "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0", "--without-namespaces"} {
			if !strings.Contains(fix, want) {
				t.Errorf("%s: the fix lacks %q:\n%s", tt.exe, want, fix)
			}
		}
	}
}

func TestContainerFix(t *testing.T) {
	for _, tt := range []struct {
		kind       string
		want, lack []string
	}{
		{"Docker", []string{"--security-opt seccomp=unconfined --security-opt apparmor=unconfined", "runArgs", "--without-namespaces"}, []string{"Kubernetes"}},
		{"Kubernetes", []string{"seccompProfile: {type: Unconfined}", "--without-namespaces"}, []string{"docker run"}},
		{"", []string{"docker run", "Kubernetes"}, nil},
	} {
		fix := containerFix(tt.kind)
		for _, w := range tt.want {
			if !strings.Contains(fix, w) {
				t.Errorf("%q: lacks %q:\n%s", tt.kind, w, fix)
			}
		}
		for _, l := range tt.lack {
			if strings.Contains(fix, l) {
				t.Errorf("%q: has %q:\n%s", tt.kind, l, fix)
			}
		}
	}
}

// TestReadmeHasTheFixes: the README prints the same install commands the
// error does (for the binary at /usr/local/bin), so the two cannot drift.
func TestReadmeHasTheFixes(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Skipf("no README here: %v", err)
	}
	for _, p := range appArmorProfiles("/usr/local/bin/nanosandbox-mcp") {
		if !strings.Contains(string(b), p.Install) {
			t.Errorf("the README lacks the install command of %s:\n%s", p.Name, p.Install)
		}
	}
	for _, fix := range []string{"--security-opt seccomp=unconfined --security-opt apparmor=unconfined", "kernel.apparmor_restrict_unprivileged_userns=0"} {
		if !strings.Contains(string(b), fix) {
			t.Errorf("the README lacks %q", fix)
		}
	}
}
