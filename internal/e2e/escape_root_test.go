package e2e

import (
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A command reads and writes what its caller can, in the paths granted to
// it, and nothing more elsewhere. A root caller's command runs as an
// unprivileged uid on the host: root-only files outside the grants stay
// closed to it as to any other user, though inside it still sees itself as
// root and owns what it makes in the workspace, which is root's on the host.
// For any other caller the command is the caller, and the same rows hold by
// the kernel's own checks.

// rootOnly lists files and directories on this machine that only root can
// read: owned by root, with no read bit for others (and none for the group,
// if it is root's), outside what the sandbox hides or masks anyway.
func rootOnly(t *testing.T) (files, dirs []string) {
	t.Helper()
	masked := []string{"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/security/opasswd", "/etc/ssh/"}
	add := func(p string, fi fs.FileInfo) bool {
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok || st.Uid != 0 || fi.Mode().Perm()&0o004 != 0 || fi.Mode().Perm()&0o040 != 0 && st.Gid == 0 {
			return false
		}
		for _, m := range masked {
			if p == m || strings.HasSuffix(m, "/") && strings.HasPrefix(p, m) {
				return false
			}
		}
		switch {
		case fi.Mode().IsRegular():
			files = append(files, p)
		case fi.IsDir():
			dirs = append(dirs, p)
		default:
			return false
		}
		return true
	}
	for _, p := range []string{"/proc/slabinfo", "/proc/timer_list", "/proc/kcore", "/proc/kpageflags", "/proc/pagetypeinfo", "/proc/vmallocinfo"} {
		if fi, err := os.Stat(p); err == nil {
			add(p, fi)
		}
	}
	for _, root := range []string{"/etc", "/var/lib", "/var/log", "/var/cache", "/var/spool", "/usr/local", "/opt", "/srv"} {
		n := 0
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if n >= 30 {
				return fs.SkipAll
			}
			if err != nil || d.IsDir() && strings.Count(p, "/") > strings.Count(root, "/")+3 {
				return fs.SkipDir
			}
			if fi, err := d.Info(); err == nil && p != root && add(p, fi) {
				n++
			}
			return nil
		})
	}
	return files, dirs
}

func TestEscapeRootOnlyFiles(t *testing.T) {
	linuxOnly(t, "a root caller (refused on macOS)")
	e := newEnv(t)
	files, dirs := rootOnly(t)
	t.Logf("root-only here: %d files, among them %v; %d directories, among them %v", len(files), files[:min(len(files), 6)], len(dirs), dirs[:min(len(dirs), 6)])

	t.Run("the machine's", func(t *testing.T) {
		e := e.in(t)
		var script strings.Builder
		for _, f := range files {
			script.WriteString(`head -c1 '` + f + `' >/dev/null 2>&1 && echo "read ` + f + `"` + "\n")
		}
		for _, d := range dirs {
			script.WriteString(`ls '` + d + `' >/dev/null 2>&1 && echo "listed ` + d + `"` + "\n")
		}
		script.WriteString("true\n")
		if out := e.mustAllow(nil, script.String()); out != "" {
			t.Errorf("root-only files and directories read inside the sandbox:\n%s", out)
		}
	})

	if os.Getuid() == 0 {
		// Planted where the sandbox shows the host's tree: a file and a
		// directory only root may enter, beside a world-readable file.
		dir, err := os.MkdirTemp("/var/lib", "nsb-e2e-root-only-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		os.Chmod(dir, 0o755)
		secret := e.write(filepath.Join(dir, "secret"), "root only "+secretValue+"\n", 0o600)
		e.write(filepath.Join(dir, "closed/inner"), "inner\n", 0o644)
		os.Chmod(filepath.Join(dir, "closed"), 0o700)
		group := e.write(filepath.Join(dir, "group"), "group root "+secretValue+"\n", 0o640)
		public := e.write(filepath.Join(dir, "public"), "public\n", 0o644)
		for _, tt := range []struct{ name, script string }{
			{"read a 0600 file", `cat ` + secret},
			{"read a 0640 file of group root", `cat ` + group},
			{"list a 0700 directory", `ls ` + dir + `/closed`},
			{"enter a 0700 directory", `cat ` + dir + `/closed/inner`},
		} {
			t.Run(tt.name, func(t *testing.T) {
				e := e.in(t)
				if out := e.mustDeny(nil, tt.script); strings.Contains(out, secretValue) {
					t.Errorf("%q printed the secret: %s", tt.script, out)
				}
			})
		}
		t.Run("read a world-readable file", func(t *testing.T) {
			e := e.in(t)
			if out := e.mustAllow(nil, `cat `+public); out != "public\n" {
				t.Errorf("got %q, want %q", out, "public\n")
			}
		})
	}

	t.Run("own files in the grants", func(t *testing.T) {
		e := e.in(t)
		e.write("own-secret", "mine\n", 0o600)
		e.write("own-dir/inner", "inner\n", 0o600)
		os.Chmod(filepath.Join(e.ws, "own-dir"), 0o700)
		ro, err := os.MkdirTemp("", "nsb-escape-own-ro-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(ro) })
		os.Chmod(ro, 0o755)
		roFile := e.write(filepath.Join(ro, "own-ro"), "mine, read-only\n", 0o600)
		out := e.mustAllow([]string{"--read-only", ro}, `cat own-secret own-dir/inner `+roFile+` && echo more >> own-secret && ls own-dir && echo x > own-dir/new`)
		if out != "mine\ninner\nmine, read-only\ninner\n" {
			t.Errorf("got %q", out)
		}
	})

	t.Run("what it makes is the caller's", func(t *testing.T) {
		e := e.in(t)
		e.mustAllow(nil, `echo x > made && mkdir made-dir && echo y > made-dir/inner && ln -s made made-link && mkfifo made-fifo`)
		for _, p := range []string{"made", "made-dir", "made-dir/inner", "made-link", "made-fifo"} {
			fi, err := os.Lstat(filepath.Join(e.ws, p))
			if err != nil {
				t.Errorf("%s: %v", p, err)
				continue
			}
			st := fi.Sys().(*syscall.Stat_t)
			if int(st.Uid) != os.Getuid() || int(st.Gid) != os.Getgid() {
				t.Errorf("%s is owned by %d:%d on the host, want the caller's %d:%d", p, st.Uid, st.Gid, os.Getuid(), os.Getgid())
			}
		}
	})

	t.Run("private directories are writable", func(t *testing.T) {
		e := e.in(t)
		e.mustAllow(nil, `for d in /tmp /var/tmp /run /dev/shm "$HOME"; do echo x > "$d/nsb-probe" && rm "$d/nsb-probe" || exit 1; done`)
	})

	t.Run("its identity on the host", func(t *testing.T) {
		e := e.in(t)
		marker := sleepMarker()
		e.startOneShot(nil, "sleep", marker)
		var pid string
		for deadline := time.Now().Add(10 * time.Second); pid == ""; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("sleep %s never started", marker)
			}
			for _, p := range processesWith(marker) {
				if id, cmdline, _ := strings.Cut(p, ": "); strings.TrimSpace(cmdline) == "sleep "+marker {
					pid = id
				}
			}
		}
		b, err := os.ReadFile("/proc/" + pid + "/status")
		if err != nil {
			t.Fatal(err)
		}
		fields := map[string][]string{}
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok {
				fields[k] = strings.Fields(v)
			}
		}
		t.Logf("Uid %v, Gid %v, Groups %v, CapEff %v", fields["Uid"], fields["Gid"], fields["Groups"], fields["CapEff"])
		if len(fields["Uid"]) != 4 || len(fields["Gid"]) != 4 {
			t.Fatalf("no Uid or Gid line in /proc/%s/status:\n%s", pid, b)
		}
		if os.Getuid() == 0 {
			for _, k := range []string{"Uid", "Gid", "Groups"} {
				if slices.Contains(fields[k], "0") {
					t.Errorf("%s: %v on the host: a root caller's command holds id 0", k, fields[k])
				}
			}
		} else {
			want := []string{strconv.Itoa(os.Getuid())}
			if got := slices.Compact(fields["Uid"]); !slices.Equal(got, want) {
				t.Errorf("Uid %v on the host, want the caller's %v", fields["Uid"], want)
			}
		}
		if eff := fields["CapEff"]; len(eff) != 1 || strings.Trim(eff[0], "0") != "" {
			t.Errorf("CapEff %v, want none", eff)
		}
	})
}

// TestRootCallerLayouts runs the server where a root caller's commands,
// running as another uid, could not reach what they are given: each is
// refused at start, with the fix. For another caller, whose commands are
// the caller, the same layouts work.
func TestRootCallerLayouts(t *testing.T) {
	linuxOnly(t, "a root caller's idmapped mounts (refused on macOS)")
	e := newEnv(t)
	root := os.Getuid() == 0
	want := func(t *testing.T, args []string, stdout, stderr string, code int, cause, fix string) {
		t.Helper()
		if !root {
			if code != 0 || stdout != "ok\n" {
				t.Errorf("%v: exit %d, stdout %q, stderr %q; want ok", args, code, stdout, stderr)
			}
			return
		}
		if code != 1 || !strings.Contains(stderr, cause) || !strings.Contains(stderr, "hint: ") || !strings.Contains(stderr, fix) {
			t.Errorf("%v: exit %d, stderr %q; want exit 1 with %q and a hint with %q", args, code, stderr, cause, fix)
		}
	}

	t.Run("workspace below a directory only its owner enters", func(t *testing.T) {
		// Somewhere the sandbox shows the host's tree: not a temporary
		// directory or the (hidden) home of the server.
		parent := "/var/lib"
		if !root {
			u, err := user.Current()
			if err != nil {
				t.Fatal(err)
			}
			parent = u.HomeDir
		}
		closed, err := os.MkdirTemp(parent, "nsb-e2e-closed-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(closed) })
		ws := filepath.Join(closed, "ws")
		if err := os.Mkdir(ws, 0o755); err != nil {
			t.Fatal(err)
		}
		os.Chmod(closed, 0o700)
		args := []string{"--workspace", ws, "--", "sh", "-c", "echo ok"}
		stdout, stderr, code := e.runRaw(args...)
		want(t, args, stdout, stderr, code, "may not enter "+closed, "chmod o+x "+closed)
	})

	t.Run("a binary only its owner may run", func(t *testing.T) {
		dir := t.TempDir()
		os.Chmod(dir, 0o755)
		bin := filepath.Join(dir, "nanosandbox-mcp")
		b, err := os.ReadFile(serverBin)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(bin, b, 0o700); err != nil {
			t.Fatal(err)
		}
		args := []string{"--workspace", e.ws, "--", "sh", "-c", "echo ok"}
		cmd := exec.Command(bin, args...)
		cmd.Env, cmd.Dir = e.vars, e.ws
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cmd.Run()
		want(t, args, stdout.String(), stderr.String(), cmd.ProcessState.ExitCode(), "other users may not run it", "chmod o+rx "+bin)
	})

	if root {
		t.Run("writable path on a filesystem without idmapped mounts", func(t *testing.T) {
			unshare, err := exec.LookPath("unshare")
			if err != nil {
				t.Fatalf("needs util-linux unshare to mount a ramfs in a mount namespace of its own: %v", err)
			}
			dir := t.TempDir()
			os.Chmod(dir, 0o755)
			// ramfs has no idmapped mounts (tmpfs has, since Linux 6.3).
			cmd := exec.Command(unshare, "-m", "--propagation", "private", "sh", "-c",
				`mount -t ramfs none "$1" && shift && exec "$@"`, "sh", dir,
				serverBin, "--workspace", e.ws, "--writable", dir, "--", "sh", "-c", "echo ok")
			cmd.Env, cmd.Dir = e.vars, e.ws
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			cmd.Run()
			want(t, cmd.Args, stdout.String(), stderr.String(), cmd.ProcessState.ExitCode(), "write "+dir+" through an idmapped mount", "idmapped mounts")
		})
	}
}
