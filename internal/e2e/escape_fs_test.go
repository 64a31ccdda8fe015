package e2e

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The filesystem rows of DESIGN.md §7: what a command may write and read.

func TestEscapeWriteWorkspaceAndTmp(t *testing.T) {
	e := newEnv(t)

	t.Run("workspace", func(t *testing.T) {
		e := e.in(t)
		e.mustAllow(nil, `mkdir -p sub && echo made-inside > sub/inside.txt && cat sub/inside.txt`)
		b, err := os.ReadFile(filepath.Join(e.ws, "sub/inside.txt"))
		if err != nil || string(b) != "made-inside\n" {
			t.Errorf("host sees %q, %v; want the file written inside", b, err)
		}
	})

	name := uniqueMarker(t)
	tmp := sandboxTmp()
	t.Run("private tmp", func(t *testing.T) {
		e := e.in(t)
		e.mustAllow(nil, `echo x > `+tmp+`/`+name+` && test "$(cat `+tmp+`/`+name+`)" = x`)
		if _, err := os.Lstat("/tmp/" + name); err == nil {
			t.Errorf("/tmp/%s written inside the sandbox appeared in the host's /tmp", name)
		}
		if runtime.GOOS == "darwin" {
			e.mustDeny(nil, `echo x > /tmp/`+name) // the host's, shared
		}
	})

	t.Run("tmp is fresh per call", func(t *testing.T) {
		e := e.in(t)
		e.mustAllow(nil, `echo x > `+tmp+`/fresh-`+name)
		if ok, out := e.try(nil, `ls -A `+tmp+`; test ! -e `+tmp+`/fresh-`+name); !ok {
			t.Errorf("a file from the previous call is still in %s: %s", tmp, out)
		}
		s := e.serve()
		s.sh(t, `echo x > `+tmp+`/fresh-`+name)
		if _, out := s.sh(t, `test ! -e `+tmp+`/fresh-`+name+` && echo fresh`); out.Stdout != "fresh\n" {
			t.Errorf("over MCP, a file from the previous call is still in %s: %+v", tmp, out)
		}
	})

	t.Run("other private dirs never reach the host", func(t *testing.T) {
		e := e.in(t)
		for _, dir := range []string{"/var/tmp", "/dev/shm", "/run"} {
			e.try(nil, `echo x > `+dir+`/`+name)
			if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
				os.Remove(filepath.Join(dir, name))
				t.Errorf("%s/%s written inside the sandbox appeared on the host", dir, name)
			}
		}
	})

	t.Run("host tmp and run are hidden", func(t *testing.T) {
		e := e.in(t)
		hostTmp, err := os.MkdirTemp("/tmp", "nsb-escape-host-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(hostTmp)
		os.Chmod(hostTmp, 0o755)
		e.write(filepath.Join(hostTmp, "visible.txt"), "host tmp\n", 0o644)
		e.mustDeny(nil, `cat `+hostTmp+`/visible.txt`)
		ents, _ := os.ReadDir("/run")
		if len(ents) > 0 {
			e.mustDeny(nil, `test -e /run/`+ents[0].Name())
		}
	})
}

func TestEscapeWriteOutside(t *testing.T) {
	e := newEnv(t)
	ro, err := os.MkdirTemp("", "nsb-escape-ro-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(ro) })
	os.Chmod(ro, 0o755)
	e.write(filepath.Join(ro, "file"), "read-only content\n", 0o644)
	e.write(filepath.Join(ro, "dir/inner"), "inner\n", 0o644)
	flags := []string{"--read-only", ro}
	name := uniqueMarker(t)
	outside := []string{"/etc/" + name, "/" + name, "/usr/bin/" + name, "/var/" + name}
	t.Cleanup(func() {
		for _, p := range outside {
			os.Remove(p)
		}
	})
	before := snapshot(t, ro)

	for _, tt := range []struct{ name, script string }{
		{"create in /etc", `echo x > /etc/` + name},
		{"create in /", `echo x > /` + name},
		{"create in /usr/bin", `echo x > /usr/bin/` + name},
		{"create in /var", `echo x > /var/` + name},
		{"append to a read-only file", `echo x >> ` + ro + `/file`},
		{"truncate a read-only file", `: > ` + ro + `/file`},
		{"create in a read-only dir", `echo x > ` + ro + `/new`},
		{"remove a read-only file", `rm -f ` + ro + `/file`},
		{"rename a read-only file", `mv ` + ro + `/file ` + ro + `/moved`},
		{"chmod a read-only file", `chmod 777 ` + ro + `/file`},
		{"remove a read-only tree", `rm -rf ` + ro + `/dir`},
		{"symlink to /etc", `ln -s /etc sl-etc && echo x > sl-etc/` + name},
		{"symlink to a read-only file", `ln -s ` + ro + `/file sl-file && echo x >> sl-file`},
		{"symlink to a read-only dir", `ln -s ` + ro + ` sl-dir && echo x > sl-dir/new`},
		{"relative symlink out of the workspace", `ln -s ../../../../../../../etc sl-up && echo x > sl-up/` + name},
		{"hardlink a read-only file", `ln ` + ro + `/file hl-file && echo x >> hl-file`},
		{"hardlink a read-only file in a dir", `ln ` + ro + `/dir/inner hl-inner && echo x >> hl-inner`},
		{"hardlink /etc/passwd", `ln /etc/passwd hl-passwd`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := e.in(t)
			e.mustDeny(flags, tt.script)
			if got := snapshot(t, ro); got != before {
				t.Errorf("read-only dir changed on the host:\n%s\nwant:\n%s", got, before)
			}
			for _, p := range outside {
				if _, err := os.Lstat(p); err == nil {
					t.Errorf("%s was created on the host", p)
				}
			}
		})
	}
	if _, err := os.Lstat(filepath.Join(e.ws, "hl-passwd")); err == nil {
		t.Errorf("a hardlink to /etc/passwd was left in the workspace")
	}
}

func TestEscapeHomeWrites(t *testing.T) {
	linuxOnly(t, "the private home is mounted at the home's path (macOS: TestEscapeHomeWritesMacOS)")
	e := newEnv(t)
	names := func() []string {
		ents, _ := os.ReadDir(e.home)
		var out []string
		for _, d := range ents {
			if d.Name() != ".cache" { // the private homes live here
				out = append(out, d.Name())
			}
		}
		return out
	}
	before := names()
	creds := map[string]string{}
	for _, c := range []string{".ssh", ".aws", ".netrc", "notes.txt"} {
		creds[c] = snapshot(t, filepath.Join(e.home, c))
	}

	h := e.home
	e.mustAllow(nil, `echo planted > `+h+`/planted.txt &&
mkdir -p `+h+`/.ssh && echo ssh-ed25519 AAAA planted >> `+h+`/.ssh/authorized_keys &&
echo 'echo pwned' >> `+h+`/.bashrc &&
echo overwritten > `+h+`/notes.txt &&
mkdir -p `+h+`/.config/autostart && echo x > `+h+`/.config/autostart/evil.desktop`)

	if got := names(); !slices.Equal(got, before) {
		t.Errorf("the host's home changed: got %v, want %v", got, before)
	}
	for c, want := range creds {
		if got := snapshot(t, filepath.Join(e.home, c)); got != want {
			t.Errorf("host %s changed:\n%s\nwant:\n%s", c, got, want)
		}
	}
	for _, p := range []string{"planted.txt", ".ssh/authorized_keys", ".bashrc", ".config"} {
		if _, err := os.Lstat(filepath.Join(e.home, p)); err == nil {
			t.Errorf("~/%s written inside the sandbox landed in the host's home", p)
		}
	}
	// It landed in the private home, which persists across calls.
	if m, _ := filepath.Glob(filepath.Join(e.home, ".cache/nanosandbox-mcp/homes/*/planted.txt")); len(m) != 1 {
		t.Errorf("planted.txt is not in exactly one private home: %v", m)
	}
	if out := e.mustAllow(nil, `cat `+h+`/planted.txt`); out != "planted\n" {
		t.Errorf("the next call reads %q from the private home, want %q", out, "planted\n")
	}
}

func TestEscapeCredentials(t *testing.T) {
	e := newEnv(t)
	creds := []string{".ssh/id_ed25519", ".aws/credentials", ".netrc"}

	check := func(t *testing.T, flags []string, notesVisible bool) {
		e := e.in(t)
		for _, c := range creds {
			out := e.mustDenyOrEmpty(flags, `cat `+filepath.Join(e.home, c))
			if strings.Contains(out, secretValue) {
				t.Errorf("~/%s is readable: %q", c, out)
			}
		}
		_, out := e.try(flags, `ls -laR `+e.home+`/.ssh `+e.home+`/.aws; cat `+e.home+`/.ssh/* `+e.home+`/.aws/*`)
		if strings.Contains(out, secretValue) || strings.Contains(out, "id_ed25519") || strings.Contains(out, "credentials") {
			t.Errorf("credential directories list or read their files:\n%s", out)
		}
		_, out = e.try(flags, `grep -rs nsb-secret `+e.home+` /tmp /run /var/tmp; cat /proc/self/root`+e.home+`/.netrc`)
		grepHit := strings.Contains(out, secretValue)
		if notesVisible {
			grepHit = strings.Contains(strings.ReplaceAll(out, e.home+"/notes.txt:home notes "+secretValue, ""), secretValue)
		}
		if grepHit {
			t.Errorf("a secret is found by searching the home:\n%s", out)
		}
		notes := filepath.Join(e.home, "notes.txt")
		if notesVisible {
			if out := e.mustAllow(flags, `cat `+notes); !strings.Contains(out, "home notes") {
				t.Errorf("with --read-only $HOME, notes.txt reads %q", out)
			}
		} else if out := e.mustDenyOrEmpty(flags, `cat `+notes); strings.Contains(out, secretValue) {
			t.Errorf("another file in home is readable: %q", out)
		}
		for _, f := range []string{"/etc/shadow", "/etc/gshadow"} {
			if out := e.mustDenyOrEmpty(flags, `cat `+f); strings.Contains(out, "root:") {
				t.Errorf("%s is readable: %q", f, out)
			}
		}
	}
	t.Run("default policy", func(t *testing.T) { check(t, nil, false) })
	t.Run("read-only home", func(t *testing.T) {
		flags := []string{"--read-only", e.home}
		check(t, flags, true)
		e := e.in(t)
		e.mustDeny(flags, `echo x > `+e.home+`/planted.txt`)
		if _, err := os.Lstat(filepath.Join(e.home, "planted.txt")); err == nil {
			t.Errorf("a write to the read-only home landed on the host")
		}
	})
}

// Under --read-only ~ the credentials other tools keep, beside the ones
// TestEscapeCredentials reads, are masked too: git's credential store at
// its XDG place, podman's registry logins, Claude Code's token and the rest
// a red-team round found readable.
func TestEscapeCredentialsOfOtherTools(t *testing.T) {
	e := newEnv(t)
	files := []string{".config/git/credentials", ".claude/.credentials.json", ".config/containers/auth.json",
		".config/sops/age/keys.txt", ".pgpass", ".vault-token", ".m2/settings.xml", ".gradle/gradle.properties",
		".config/glab-cli/config.yml", ".fly/config.yml", ".config/rclone/rclone.conf", ".yarnrc.yml", ".config/op/config"}
	for _, f := range files {
		e.write(filepath.Join(e.home, f), "SECRET:"+f+" "+secretValue+"\n", 0o600)
	}
	e.write(filepath.Join(e.home, ".config/git/config"), "[user]\n\tname = shown\n", 0o644)
	script := ""
	for _, f := range files {
		script += "cat ~/" + f + "; "
	}
	_, out := e.try([]string{"--read-only", e.home}, script+"cat ~/.config/git/config")
	for _, f := range files {
		if strings.Contains(out, "SECRET:"+f+" ") {
			t.Errorf("~/%s is readable under --read-only ~", f)
		}
	}
	if !strings.Contains(out, "name = shown") {
		t.Errorf("~/.config/git/config beside the masked store does not read (the control):\n%s", out)
	}
}

// mustDenyOrEmpty runs script and fails the test if it printed anything
// while succeeding: a masked file reads as empty, a hidden one is missing.
func (e *env) mustDenyOrEmpty(flags []string, script string) string {
	e.t.Helper()
	ok, out := e.try(flags, script)
	if ok && out != "" {
		e.t.Errorf("%q: succeeded with %q, want denied or empty", script, out)
	}
	return out
}

func TestEscapeReadAllowed(t *testing.T) {
	e := newEnv(t)
	if out := e.mustAllow(nil, `cat /etc/passwd`); !strings.Contains(out, "root:") {
		t.Errorf("/etc/passwd reads %q", out)
	}
	if out := e.mustAllow(nil, `/usr/bin/id -u`); strings.TrimSpace(out) != strconv.Itoa(os.Getuid()) {
		t.Errorf("/usr/bin/id -u says %q, want the caller's uid %d", out, os.Getuid())
	}
	for _, b := range []string{"/usr/bin/env", "/usr/bin/git", "/usr/bin/perl", "/usr/bin/python3", "/usr/bin/ls", "/bin/ls"} {
		if _, err := os.Stat(b); err != nil {
			continue
		}
		arg := map[string]string{"/usr/bin/env": "true", "/usr/bin/ls": "/", "/bin/ls": "/"}[b]
		if arg == "" {
			arg = "--version"
		}
		e.mustAllow(nil, b+" "+arg+" >/dev/null")
	}
	if out := e.mustAllow(nil, `ls /usr/bin | wc -l`); strings.TrimSpace(out) == "0" {
		t.Errorf("/usr/bin lists empty")
	}
}

func TestEscapeReadOnlyCarveOut(t *testing.T) {
	e := newEnv(t)
	e.write("vendor/lib/file.go", "package lib\n", 0o644)
	e.write("vendor/lib/deep/more.go", "package deep\n", 0o644)
	e.write("config.json", "{}\n", 0o644)
	lib, cfg := filepath.Join(e.ws, "vendor/lib"), filepath.Join(e.ws, "config.json")
	flags := []string{"--read-only", lib, "--read-only", cfg}
	before := snapshot(t, lib) + "\n" + snapshot(t, cfg)

	for _, tt := range []struct{ name, script string }{
		{"append to a file", `echo x >> vendor/lib/file.go`},
		{"truncate a file", `: > vendor/lib/file.go`},
		{"create a file", `echo x > vendor/lib/new.go`},
		{"create a deeper file", `echo x > vendor/lib/deep/new.go`},
		{"remove a file", `rm vendor/lib/file.go`},
		{"rename a file", `mv vendor/lib/file.go vendor/lib/f.go`},
		{"chmod a file", `chmod 777 vendor/lib/file.go`},
		{"rename the carve-out", `mv vendor/lib vendor/lib.old`},
		{"remove the carve-out", `rm -rf vendor/lib`},
		{"rename its parent", `mv vendor vendor.old`},
		{"remove its parent", `rm -rf vendor`},
		{"replace its parent by a symlink", `mv vendor v && ln -s v vendor`},
		{"write the file carve-out", `echo '{"x":1}' > config.json`},
		{"truncate the file carve-out", `: > config.json`},
		{"remove the file carve-out", `rm -f config.json`},
		{"rename the file carve-out", `mv config.json c.json`},
		{"rename over the file carve-out", `echo '{"x":1}' > c2.json && mv c2.json config.json`},
		{"chmod the file carve-out", `chmod 777 config.json`},
		{"hardlink the file carve-out and write it", `ln config.json hl.json && echo x >> hl.json`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := e.in(t)
			e.mustDeny(flags, tt.script)
			if got := snapshot(t, lib) + "\n" + snapshot(t, cfg); got != before {
				t.Errorf("carve-out changed on the host:\n%s\nwant:\n%s", got, before)
			}
		})
	}
	t.Run("mount calls", func(t *testing.T) {
		linuxOnly(t, "mounts")
		e := e.in(t)
		e.wantDenied(flags, "umount", lib)
		e.wantDenied(flags, "umount", cfg)
		e.wantDenied(flags, "remount-rw", lib)
		e.wantDenied(flags, "mount-tmpfs", lib)
		e.wantDenied(flags, "mount-tmpfs", filepath.Join(e.ws, "vendor"))
		e.mustDeny(flags, `echo x > vendor/lib/after-remount.go`)
		if got := snapshot(t, lib) + "\n" + snapshot(t, cfg); got != before {
			t.Errorf("carve-out changed on the host:\n%s\nwant:\n%s", got, before)
		}
	})
	t.Run("beside the carve-out stays writable", func(t *testing.T) {
		e := e.in(t)
		e.mustAllow(flags, `echo x > vendor/sibling.txt && cat vendor/lib/file.go config.json`)
	})
}
