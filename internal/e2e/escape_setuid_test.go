package e2e

import (
	"archive/tar"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// A command must not leave a file that gains privileges when someone runs it
// on the host later: no setuid or setgid bit through any system call that
// sets a mode, and no file capabilities. The sandbox mounts everything
// nosuid, but the host's own mounts are not.

// modeCalls are the system calls setMode in the attack helper makes.
func modeCalls() []string {
	calls := []string{"fchmod", "fchmodat", "fchmodat2", "chmod-procfd", "openat", "tmpfile", "mkdirat", "mknodat"}
	if runtime.GOARCH == "amd64" {
		calls = append(calls, "chmod", "open", "creat", "mkdir", "mknod")
	}
	return calls
}

// wantNoPrivilegeBits fails t if path exists on the host with the setuid or
// setgid bit.
func wantNoPrivilegeBits(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
		t.Errorf("%s has mode %v on the host, want no setuid or setgid bit", path, fi.Mode())
	}
}

func TestEscapeSetuidBits(t *testing.T) {
	linuxOnly(t, "the seccomp filter's mode checks, made by the attack helper (macOS: TestEscapeSetugidMacOS)")
	e := newEnv(t)
	host := t.TempDir()
	modes := []struct{ name, mode string }{
		{"setuid", "04755"},
		{"setgid", "02755"},
		{"setuid and setgid", "06755"},
		// umode_t is 16 bits: the kernel drops bit 16 and keeps S_ISUID.
		{"setuid with bit 16", "0x109ed"},
		// The high half of the 64-bit argument, which the kernel ignores.
		{"setuid with bit 32", "0x1000009ed"},
	}
	for _, call := range modeCalls() {
		t.Run(call, func(t *testing.T) {
			// On the host the call sets the bit (mkdir drops it itself):
			// the attempt means something.
			hostPath := filepath.Join(host, call)
			if out, err := onHost(t, "setmode", call, hostPath, "04755"); err != nil || out != "ok" {
				if call == "fchmodat2" && strings.Contains(out, "function not implemented") {
					t.Skipf("needs fchmodat2 (Linux 6.6+): on the host it gave %q", out)
				}
				t.Fatalf("setmode %s 04755 on the host: %q, %v", call, out, err)
			}
			if fi, err := os.Lstat(hostPath); err != nil || !strings.HasPrefix(call, "mkdir") && fi.Mode()&fs.ModeSetuid == 0 {
				t.Fatalf("setmode %s 04755 on the host left %v, %v; want a setuid file", call, fi.Mode(), err)
			}
			e := e.in(t)
			for _, m := range modes {
				p := filepath.Join(e.ws, call+"-"+strings.ReplaceAll(m.name, " ", "-"))
				out, code := e.attack(nil, "setmode", call, p, m.mode)
				if code != 3 || !strings.Contains(out, "operation not permitted") {
					t.Errorf("setmode %s %s (%s): exit %d %q, want denied with EPERM (exit 3)", call, m.mode, m.name, code, out)
				}
				wantNoPrivilegeBits(t, p)
			}
			// The same call without those bits works.
			p := filepath.Join(e.ws, call+"-plain")
			if out, code := e.attack(nil, "setmode", call, p, "0755"); code != 0 {
				t.Errorf("setmode %s 0755: exit %d %q, want ok", call, code, out)
			}
		})
	}
	t.Run("openat2", func(t *testing.T) {
		// Its mode sits in a struct in memory, which seccomp cannot read:
		// the whole call fails with ENOSYS, and programs fall back to
		// openat, whose mode it can.
		if out, err := onHost(t, "setmode", "openat2", filepath.Join(host, "openat2"), "04755"); err != nil || out != "ok" {
			t.Skipf("needs openat2 (Linux 5.6+): on the host it gave %q, %v", out, err)
		}
		e := e.in(t)
		for _, mode := range []string{"04755", "0644"} {
			p := filepath.Join(e.ws, "openat2-"+mode)
			out, code := e.attack(nil, "setmode", "openat2", p, mode)
			if code != 3 || !strings.Contains(out, "function not implemented") {
				t.Errorf("openat2 mode %s: exit %d %q, want denied with ENOSYS (exit 3)", mode, code, out)
			}
			wantNoPrivilegeBits(t, p)
		}
	})
}

// writeSetuidTar writes a tar archive whose members ask for the setuid and
// setgid bits, as an archive a command downloads would.
func writeSetuidTar(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := tar.NewWriter(f)
	body := "#!/bin/sh\nid\n"
	for _, h := range []tar.Header{
		{Name: "tar-suid", Mode: 0o4755, Size: int64(len(body)), Typeflag: tar.TypeReg},
		{Name: "tar-sgid", Mode: 0o2755, Size: int64(len(body)), Typeflag: tar.TypeReg},
		{Name: "tar-dir/", Mode: 0o2775, Typeflag: tar.TypeDir},
	} {
		if err := w.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			w.Write([]byte(body))
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// hostSetuidProgram returns a setuid program of the host's, or "".
func hostSetuidProgram() string {
	for _, p := range []string{"/usr/bin/passwd", "/usr/bin/su", "/bin/su", "/usr/bin/mount", "/usr/bin/newgrp", "/usr/bin/chsh"} {
		if fi, err := os.Stat(p); err == nil && fi.Mode()&fs.ModeSetuid != 0 {
			return p
		}
	}
	return ""
}

func TestEscapeSetuidTools(t *testing.T) {
	linuxOnly(t, "GNU tools and file capabilities (macOS: TestEscapeSetugidMacOS)")
	e := newEnv(t)
	// A setuid program of our own, in a directory granted read-only.
	ro, err := os.MkdirTemp("", "nsb-escape-suid-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(ro) })
	os.Chmod(ro, 0o755)
	prog, err := os.ReadFile("/bin/true")
	if err != nil {
		t.Fatal(err)
	}
	suid := e.write(filepath.Join(ro, "prog"), string(prog), 0o755|fs.ModeSetuid)
	if fi, err := os.Stat(suid); err != nil || fi.Mode()&fs.ModeSetuid == 0 {
		t.Fatalf("the setuid program on the host: %v, %v", fi.Mode(), err)
	}
	flags := []string{"--read-only", ro}
	writeSetuidTar(t, filepath.Join(e.ws, "suid.tar"))
	e.write("plain", "#!/bin/sh\n", 0o755)
	shared := filepath.Join(e.ws, "shared")
	if err := os.Mkdir(shared, 0o775); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o775|fs.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(e.ws, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}

	for _, tt := range []struct {
		name, script string
		paths        []string
	}{
		{"chmod u+s", `chmod u+s plain`, []string{"plain"}},
		{"chmod g+s", `chmod g+s plain`, []string{"plain"}},
		{"chmod 4755", `chmod 4755 plain`, []string{"plain"}},
		{"chmod 6755", `chmod 6755 plain`, []string{"plain"}},
		{"chmod g+s a directory", `chmod g+s dir`, []string{"dir"}},
		{"chmod through /proc/self/fd", `exec 3<plain && chmod 4755 /proc/self/fd/3`, []string{"plain"}},
		{"install -m 4755", `install -m 4755 /bin/true installed`, []string{"installed"}},
		{"mkdir -m 2755", `mkdir -m 2755 mkdir-sgid`, []string{"mkdir-sgid"}},
		{"tar xpf an archive with setuid members", `tar xpf suid.tar`, []string{"tar-suid", "tar-sgid", "tar-dir"}},
		{"chmod g+s a file in a setgid directory", `touch shared/f && chmod g+s shared/f`, []string{"shared/f"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := e.in(t)
			e.mustDeny(flags, tt.script)
			for _, p := range tt.paths {
				wantNoPrivilegeBits(t, filepath.Join(e.ws, p))
			}
		})
	}

	// Copies that preserve the mode: cp fails to set the bits or drops
	// them itself (when it cannot preserve the owner), so only the result
	// counts.
	copies := map[string]string{"own setuid program": suid}
	if p := hostSetuidProgram(); p != "" {
		copies["host setuid program "+p] = p
	} else {
		t.Logf("this machine has no setuid program among the usual ones: copying ours only")
	}
	for name, src := range copies {
		for _, opt := range []string{"-p", "-a", "--preserve=mode"} {
			t.Run("cp "+opt+" "+name, func(t *testing.T) {
				e := e.in(t)
				dst := filepath.Join(e.ws, "copy"+strings.ReplaceAll(opt, "=", "-"))
				os.Remove(dst)
				_, out := e.try(flags, `cp `+opt+` `+src+` `+dst)
				if _, err := os.Lstat(dst); err != nil {
					t.Fatalf("cp %s made no copy (%v): %s", opt, err, out)
				}
				wantNoPrivilegeBits(t, dst)
			})
		}
	}

	t.Run("files made in a setgid directory", func(t *testing.T) {
		e := e.in(t)
		e.mustAllow(flags, `touch shared/new && cp /bin/true shared/prog && chmod 755 shared/prog && mkdir shared/sub`)
		for _, p := range []string{"shared/new", "shared/prog"} {
			wantNoPrivilegeBits(t, filepath.Join(e.ws, p))
		}
		// A new directory inherits the setgid bit from the kernel, as
		// everywhere: it only passes on the group; running nothing gains it.
		if fi, err := os.Stat(filepath.Join(e.ws, "shared/sub")); err == nil {
			t.Logf("shared/sub: %v", fi.Mode())
		}
	})

	t.Run("file capabilities", func(t *testing.T) {
		e := e.in(t)
		p := e.write("capable", "#!/bin/sh\n", 0o755)
		e.wantDenied(nil, "setcap", p)
		if _, err := unix.Getxattr(p, "security.capability", make([]byte, 64)); !errors.Is(err, unix.ENODATA) {
			t.Errorf("getxattr security.capability on the host: %v, want %v", err, unix.ENODATA)
		}
		// An ordinary extended attribute works, where the filesystem has them.
		hostFile := filepath.Join(t.TempDir(), "f")
		os.WriteFile(hostFile, nil, 0o644)
		if out, err := onHost(t, "setxattr-user", hostFile); err != nil {
			t.Logf("no user.* extended attributes on the host's filesystem: %s", out)
			return
		}
		if out, code := e.attack(nil, "setxattr-user", p); code != 0 {
			t.Errorf("setxattr user.*: exit %d %q, want ok", code, out)
		}
	})

	t.Run("modes without those bits", func(t *testing.T) {
		e := e.in(t)
		e.mustAllow(flags, `chmod 700 plain && chmod 755 plain && chmod +t dir && chmod 1777 dir && chmod 755 dir && install -m 755 /bin/true inst && mkdir -m 750 plain-dir && tar cf plain.tar plain && tar xpf plain.tar`)
	})
}
