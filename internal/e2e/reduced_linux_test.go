package e2e

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The sandbox without namespaces (--without-namespaces): what it refuses
// at start, the escape rows it holds, and what it gives up, as the tool's
// description says.

func TestWithoutNamespaces(t *testing.T) {
	t.Run("refused at start", func(t *testing.T) {
		e := newEnv(t)
		for _, tt := range []struct {
			name  string
			flags []string
			code  int
			want  []string
		}{
			{"nothing given up", []string{"--without-namespaces"}, 2, []string{
				"error: --without-namespaces: cannot keep these protections:\n  git-carve-outs: ",
				"hint: to run without them, add --without-protection git-carve-outs,private-tmp,process-isolation,file-metadata"}},
			{"one kept", []string{"--without-namespaces", "--without-protection", "private-tmp", "--without-protection", "process-isolation,file-metadata"}, 2, []string{
				"cannot keep this protection:\n  git-carve-outs: .git hooks and config stay read-only", "add --without-protection git-carve-outs;"}},
			{"an unknown protection", append(reducedFlags, "--without-protection", "pid-namespace"), 2, []string{"--without-protection \"pid-namespace\": not a protection"}},
			{"a protection without the mode", []string{"--without-protection", "private-tmp"}, 2, []string{"goes with --without-namespaces"}},
			{"allow-net", append(reducedFlags, "--allow-net", "example.com"), 2, []string{"--allow-net \"example.com\": needs the sandbox's own network namespace", "--host-network"}},
			{"read-only inside the workspace", append(reducedFlags, "--read-only", e.ws), 2, []string{"also given as --workspace"}},
		} {
			t.Run(tt.name, func(t *testing.T) {
				_, errOut, code := e.run(tt.flags, "true")
				for _, w := range tt.want {
					if code != tt.code || !strings.Contains(errOut, w) {
						t.Errorf("exit %d, stderr:\n%s\nwant exit %d and %q", code, errOut, tt.code, w)
					}
				}
			})
		}
		sub := filepath.Join(e.ws, "sub")
		os.Mkdir(sub, 0o755)
		if _, errOut, code := e.run(append(reducedFlags, "--read-only", sub), "true"); code != 2 || !strings.Contains(errOut, "lies inside the writable "+e.ws) {
			t.Errorf("--read-only inside the workspace: exit %d %q, want refused (exit 2)", code, errOut)
		}
		if os.Getuid() == 0 {
			_, errOut, code := e.run(reducedFlags, "true")
			if code != 1 || !strings.Contains(errOut, "error: --without-namespaces cannot run a root caller's commands") || !strings.Contains(errOut, "hint: start the server as a regular user") {
				t.Errorf("a root caller: exit %d %q, want refused (exit 1)", code, errOut)
			}
		}
	})

	withoutNamespaces = true
	t.Cleanup(func() { withoutNamespaces = false })
	t.Run("rows", reducedRows)
	for _, row := range []struct {
		name string
		test func(*testing.T)
	}{
		{"TestEscapeCredentials", TestEscapeCredentials},
		{"TestEscapeGitCommit", TestEscapeGitCommit},
		{"TestEscapeGitPlanted", TestEscapeGitPlanted},
		{"TestEscapeYes", TestEscapeYes},
		{"TestEscapeDaemon", TestEscapeDaemon},
		{"TestEscapeJSONRPCInOutput", TestEscapeJSONRPCInOutput},
		{"TestEscapeBinaryOutput", TestEscapeBinaryOutput},
		{"TestEscapeEnvironment", TestEscapeEnvironment},
		{"TestEscapeInheritedDescriptors", TestEscapeInheritedDescriptors},
		{"TestEscapeSetuidBits", TestEscapeSetuidBits},
		{"TestEscapeRefusedSyscalls", TestEscapeRefusedSyscalls},
		{"TestEscapeInt80", TestEscapeInt80},
	} {
		t.Run(row.name, row.test)
	}
}

// reducedRows are the escape rows as the sandbox without namespaces holds
// them: each one it keeps, and each one it gives up, as its description
// says. newEnv gives servers without namespaces (withoutNamespaces).
func reducedRows(t *testing.T) {
	t.Run("workspace and TMPDIR", func(t *testing.T) {
		e := newEnv(t)
		out := e.mustAllow(nil, `echo made > inside.txt && cat inside.txt && echo x > "$TMPDIR/t" && cat "$TMPDIR/t" && echo "tmp=$TMPDIR"`)
		if b, err := os.ReadFile(filepath.Join(e.ws, "inside.txt")); err != nil || string(b) != "made\n" {
			t.Errorf("the host sees %q, %v", b, err)
		}
		m := regexp.MustCompile(`tmp=(/\S+)`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no TMPDIR in %q", out)
		}
		if _, err := os.Lstat(m[1]); err == nil {
			t.Errorf("the call's TMPDIR %s outlived it", m[1])
		}
		if out2 := e.mustAllow(nil, `echo "tmp=$TMPDIR"; ls -A "$TMPDIR"`); strings.Contains(out2, m[1]) {
			t.Errorf("two calls share TMPDIR %s", m[1])
		}
		marker := uniqueMarker(t)
		for _, dir := range []string{"/tmp", "/var/tmp", "/dev/shm", "/run"} {
			e.mustDeny(nil, `echo x > `+dir+`/`+marker)
			if _, err := os.Lstat(filepath.Join(dir, marker)); err == nil {
				os.Remove(filepath.Join(dir, marker))
				t.Errorf("%s/%s written from the sandbox", dir, marker)
			}
		}
		hostTmp, err := os.MkdirTemp("/tmp", "nsb-reduced-host-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(hostTmp)
		os.Chmod(hostTmp, 0o755)
		e.write(filepath.Join(hostTmp, "visible.txt"), "host tmp\n", 0o644)
		e.mustDeny(nil, `cat `+hostTmp+`/visible.txt`)
		e.mustDeny(nil, `ls /tmp`)
	})

	t.Run("home", func(t *testing.T) {
		e := newEnv(t)
		before := snapshot(t, e.home)
		if out := e.mustAllow(nil, `echo "home=$HOME"`); !strings.Contains(out, "home="+e.home+"/.cache/nanosandbox-mcp/homes/") {
			t.Errorf("HOME inside: %q, want the private home", out)
		}
		for _, script := range []string{
			`echo planted > ` + e.home + `/planted.txt`,
			`echo 'echo pwned' >> ` + e.home + `/.bashrc`,
			`mkdir -p ` + e.home + `/.ssh && echo key >> ` + e.home + `/.ssh/authorized_keys`,
			`echo overwritten > ` + e.home + `/notes.txt`,
			`rm -f ` + e.home + `/notes.txt`,
			`mv ` + e.home + `/notes.txt ` + e.ws + `/stolen`,
			`cat ` + e.home + `/notes.txt`,
			`cat ` + e.home + `/.ssh/id_ed25519`,
			`cat ` + e.home + `/.aws/credentials`,
			`cat ` + e.home + `/.netrc`,
			`ls ` + e.home,
			`ls /home /root`,
			`cat /etc/shadow`,
		} {
			e.mustDeny(nil, script)
		}
		if after := snapshot(t, e.home); stripCache(after) != stripCache(before) {
			t.Errorf("the home changed:\n%s\nwant:\n%s", after, before)
		}
	})

	t.Run("write outside", func(t *testing.T) {
		e := newEnv(t)
		ro, err := os.MkdirTemp("", "nsb-reduced-ro-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(ro) })
		os.Chmod(ro, 0o755)
		e.write(filepath.Join(ro, "file"), "read-only content\n", 0o644)
		if e.cred != nil {
			filepath.WalkDir(ro, func(p string, _ fs.DirEntry, _ error) error { return os.Lchown(p, int(e.cred.Uid), int(e.cred.Gid)) })
		}
		flags := []string{"--read-only", ro}
		e.mustAllow(flags, `cat `+ro+`/file`)
		before := snapshot(t, ro)
		name := uniqueMarker(t)
		for _, script := range []string{
			`echo x > /etc/` + name, `echo x > /` + name, `echo x > /usr/bin/` + name, `echo x > /var/` + name,
			`echo x >> ` + ro + `/file`, `: > ` + ro + `/file`, `truncate -s 0 ` + ro + `/file`, `echo x > ` + ro + `/new`,
			`rm -f ` + ro + `/file`, `mv ` + ro + `/file ` + ro + `/moved`, `mv ` + ro + `/file moved`,
			`ln -s ` + ro + `/file sl && echo x >> sl`, `ln -s /etc sl-etc && echo x > sl-etc/` + name,
			`ln ` + ro + `/file hl && echo x >> hl`, `ln /etc/passwd hl-passwd`,
		} {
			e.mustDeny(flags, script)
		}
		if got := snapshot(t, ro); got != before {
			t.Errorf("the read-only directory changed:\n%s\nwant:\n%s", got, before)
		}
		for _, p := range []string{"/etc/" + name, "/" + name, "/usr/bin/" + name, "/var/" + name} {
			if _, err := os.Lstat(p); err == nil {
				os.Remove(p)
				t.Errorf("%s was created", p)
			}
		}
	})

	t.Run("system readable", func(t *testing.T) {
		e := newEnv(t)
		uid := os.Getuid()
		switch {
		case simulation == "limit":
			uid = wrappedID // the server's, in the user namespace the simulation makes
		case e.cred != nil:
			uid = int(e.cred.Uid)
		}
		out := e.mustAllow(nil, `head -1 /etc/passwd && /usr/bin/id -u && ls /usr/bin | head -1`)
		if !strings.HasPrefix(out, "root:") || !strings.Contains(out, "\n"+strconv.Itoa(uid)+"\n") {
			t.Errorf("got %q, want /etc/passwd and uid %d", out, uid)
		}
		e.mustDeny(nil, `ls /`)
	})

	t.Run("processes", func(t *testing.T) {
		e := newEnv(t)
		marker := uniqueMarker(t)
		host := exec.Command("sleep", "300")
		host.Args[0] = marker
		if e.cred != nil {
			host.SysProcAttr = &syscall.SysProcAttr{Credential: e.cred} // the caller's own: only Landlock keeps commands from it
		}
		if err := host.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { host.Process.Kill(); host.Wait() })
		pid := strconv.Itoa(host.Process.Pid)
		// Given up by name (process-isolation): the host's processes show.
		if out := e.mustAllow(nil, `tr '\0' ' ' < /proc/`+pid+`/cmdline`); !strings.Contains(out, marker) {
			t.Errorf("the description says host processes show in /proc; got %q", out)
		}
		for _, f := range []string{"environ", "mem", "maps", "root/etc/hostname", "cwd/"} {
			e.mustDeny(nil, `cat /proc/`+pid+`/`+f+` | head -c 1 | grep -q .`)
		}
		e.wantDenied(nil, "ptrace-attach", pid)
		if abi := landlockABI(t); abi < 6 {
			t.Logf("Landlock ABI %d: signals are not scoped (the description says so)", abi)
		} else {
			e.mustDeny(nil, `kill -0 `+pid)
			e.wantDenied(nil, "kill", pid)
			out, stderr, _ := e.run(nil, "sh", "-c", `sleep 30 & p=$!; kill -9 -1; wait $p; echo "own sleep: $?"`)
			if !strings.Contains(out, "own sleep: 137") {
				t.Errorf("kill -9 -1 did not kill the command's own sleep: %s%s", out, stderr)
			}
			s := e.serve()
			spid := strconv.Itoa(s.cmd.Process.Pid)
			if _, out := s.sh(t, `kill -0 `+spid+` && echo signalled; kill -0 $PPID && echo helper`); strings.Contains(out.Stdout, "signalled") || strings.Contains(out.Stdout, "helper") {
				t.Errorf("the server or the helper can be signalled: %+v", out)
			}
		}
		if err := host.Process.Signal(syscall.Signal(0)); err != nil {
			t.Errorf("the host process died: %v", err)
		}
	})

	t.Run("kernel interfaces", func(t *testing.T) {
		e := newEnv(t)
		for _, script := range []string{
			`echo '|/bin/true' > /proc/sys/kernel/core_pattern`,
			`echo 1 > /proc/sys/net/ipv4/ip_forward`,
			`echo h > /proc/sysrq-trigger`,
			`echo x > /proc/self/attr/current`,
			`cat /proc/1/environ`,
			`ls /proc/1/root/`,
			`exec 3< /proc/1/mem`,
		} {
			e.mustDeny(nil, script)
		}
		e.mustAllow(nil, `cat /proc/self/environ >/dev/null && cat /proc/sys/kernel/osrelease`)
		for _, args := range [][]string{
			{"ptrace-traceme"}, {"ptrace-attach", "1"}, {"mount-tmpfs", e.ws}, {"mount-tmpfs", "/etc"},
			{"umount", "/proc"}, {"umount", "/"}, {"remount-rw", "/"}, {"fsopen"}, {"open-tree", e.ws},
			{"unshare-user"}, {"unshare-net"}, {"unshare-mount"}, {"chroot", "/"}, {"chroot", e.ws},
		} {
			e.wantDenied(nil, args...)
		}
		if _, err := os.Stat("/usr/bin/unshare"); err == nil {
			e.mustDeny(nil, `unshare -Ur id`)
		}
	})

	t.Run("network", func(t *testing.T) {
		e := newEnv(t)
		for _, tt := range []struct{ name, network, addr, attack string }{
			{"TCP to host loopback", "tcp", "127.0.0.1:0", "tcp-connect"},
			{"abstract unix socket", "unix", "@nsb-reduced-" + uniqueMarker(t), "abstract-connect"},
			{"unix socket in the workspace's parent", "unix", filepath.Join(e.home, "agent.sock"), "unix-connect"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				e := e.in(t)
				l, n := listen(t, tt.network, tt.addr)
				if tt.network == "unix" && !strings.HasPrefix(tt.addr, "@") {
					os.Chmod(tt.addr, 0o777)
					e.own(tt.addr)
				}
				target := strings.TrimPrefix(l.Addr().String(), "@")
				e.wantDenied(nil, tt.attack, target)
				time.Sleep(100 * time.Millisecond)
				if n.Load() != 0 {
					t.Errorf("the host listener accepted %d connections from the sandbox", n.Load())
				}
			})
		}
		for _, a := range []string{"mptcp", "vsock", "packet"} {
			e.wantDenied(nil, a)
		}
		// No loopback of its own: the description says so.
		e.wantDenied(nil, "loopback")
	})

	t.Run("file metadata, given up", func(t *testing.T) {
		e := newEnv(t)
		notes := filepath.Join(e.home, "notes.txt")
		before, _ := os.ReadFile(notes)
		e.mustAllow(nil, `chmod 644 `+notes)
		if fi, err := os.Stat(notes); err != nil || fi.Mode().Perm() != 0o644 {
			t.Errorf("the description says modes outside can change: %v %v", fi.Mode(), err)
		}
		if after, _ := os.ReadFile(notes); string(after) != string(before) {
			t.Errorf("the content changed")
		}
		e.mustDeny(nil, `chmod u+s inside 2>/dev/null || { touch inside && chmod u+s inside; }`)
	})

	t.Run("git carve-outs, given up", func(t *testing.T) {
		e := plantEnv(t)
		e.gitRepo()
		s := e.serve()
		res, _ := s.sh(t, e.expand(`printf '#!/bin/sh\n%s\n' "$PWN" > .git/hooks/pre-commit && git config core.fsmonitor "$PWN" && echo written`))
		if !strings.Contains(text(res), "written") {
			t.Errorf("the description says hooks and config are writable during a call: %s", text(res))
		}
		if !strings.Contains(text(res), "moved") && !strings.Contains(text(res), "git") {
			t.Errorf("no note on what was judged: %s", text(res))
		}
		if e.userGit() {
			t.Errorf("the user's git ran what the call planted; the call said: %s", text(res))
		}
	})

	t.Run("limits", func(t *testing.T) {
		e := newEnv(t)
		e.attackPath()
		s := e.serve("--max-processes", "64", "--memory", "256MiB", "--max-file-size", "10MiB", "--timeout", "20s")
		if res, out := s.sh(t, "b() { b | b & }; b; sleep 2"); out.DurationMS > 19000 {
			t.Errorf("fork bomb: %s %+v", text(res), out)
		}
		res, out := s.call(t, map[string]any{"command": "./attack", "args": []string{"membomb"}})
		wantLimit(t, res.IsError, text(res), out, "memory limit 256 MiB")
		res, out = s.sh(t, "head -c 20000000 /dev/zero > big")
		wantLimit(t, res.IsError, text(res), out, "file size limit 10 MiB (rlimit)")
		if _, out := s.sh(t, "echo alive"); out.Stdout != "alive\n" {
			t.Errorf("the server after the bombs: %+v", out)
		}
	})

	t.Run("description and check", func(t *testing.T) {
		e := newEnv(t)
		d := description(t, e.serve())
		for _, want := range []string{"runs without namespaces", "$TMPDIR", "see the host's processes", ".git hooks and config are writable while a call runs", "no loopback of the sandbox's own"} {
			if !strings.Contains(d, want) {
				t.Errorf("the description lacks %q:\n%s", want, d)
			}
		}
		out, errOut, code := e.runRaw(append([]string{"--check", "--workspace", e.ws}, e.extra...)...)
		if code != 0 || !strings.Contains(out, "mode          without namespaces (--without-namespaces)") || !strings.Contains(out, "weaker") {
			t.Errorf("--check: exit %d\n%s%s", code, out, errOut)
		}
	})
}

// stripCache drops the lines of a home snapshot below .cache, where the
// server keeps its state.
func stripCache(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(l, ".cache") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// landlockABI is the kernel's Landlock ABI version, 0 without Landlock.
func landlockABI(t *testing.T) int {
	abi, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(abi)
}
