package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runAliased runs the binary with args where other mounts show what the
// sandbox hides: the home (/mnt/home), its .ssh (/mnt/ssh), /etc
// (/mnt/etc) and host /tmp (/mnt/tmp); and, as a control, a directory that
// is not hidden (/mnt/src at /mnt/dst). The mounts are made in a mount
// namespace of the test's own (see wrapped): nothing changes outside.
func (e *env) runAliased(args ...string) (stdout, stderr string, code int) {
	e.t.Helper()
	setup := `set -e
mount -t tmpfs nsb-alias /mnt
mkdir /mnt/home /mnt/ssh /mnt/etc /mnt/tmp /mnt/src /mnt/dst
mount --bind "$HOME" /mnt/home
mount --bind "$HOME/.ssh" /mnt/ssh
mount --bind /etc /mnt/etc
mount --bind /tmp /mnt/tmp
echo visible > /mnt/src/file
mount --bind /mnt/src /mnt/dst`
	cmd := e.wrapped(setup, args...)
	var o, s bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &s
	if err := cmd.Run(); err != nil && cmd.ProcessState == nil {
		e.t.Fatalf("run %v: %v", args, err)
	}
	return o.String(), s.String(), exitCode(cmd.ProcessState)
}

// TestHiddenThroughOtherMounts: what the sandbox hides stays hidden where
// another mount shows the same directory or file.
func TestHiddenThroughOtherMounts(t *testing.T) {
	e := newEnv(t)
	hostTmp := strings.Split(e.home, "/")[2] // the test's own directory in host /tmp
	script := `for f in /mnt/home/notes.txt /mnt/home/proj/README /mnt/ssh/id_ed25519 /mnt/etc/shadow; do echo "== $f"; cat "$f" 2>&1; done
echo "== ls"; ls -A /mnt/home /mnt/ssh /mnt/tmp 2>&1
echo "== control"; cat /mnt/dst/file /mnt/etc/hostname 2>&1`
	stdout, stderr, code := e.runAliased("--workspace", e.ws, "--", "sh", "-c", script)
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	t.Logf("inside:\n%s", stdout)
	for _, leak := range []string{secretValue, "the workspace", "root:"} {
		if strings.Contains(stdout, leak) {
			t.Errorf("another mount shows %q", leak)
		}
	}
	_, listing, _ := strings.Cut(stdout, "== ls")
	listing, _, _ = strings.Cut(listing, "== control")
	for _, leak := range []string{hostTmp, "id_ed25519", "notes.txt", "proj"} {
		if strings.Contains(listing, leak) {
			t.Errorf("another mount lists %q", leak)
		}
	}
	if !strings.Contains(stdout, "visible") {
		t.Errorf("a directory that is not hidden is not shown through its other mount")
	}

	// The workspace through the other mount of the home: inside it is a
	// project, the home itself is refused.
	if _, stderr, code := e.runAliased("--workspace", "/mnt/home", "--", "true"); code != 2 || !strings.Contains(stderr, "mounted again") || !strings.Contains(stderr, "hint: ") {
		t.Errorf("--workspace /mnt/home: got exit %d, stderr %q; want exit 2 naming the home mounted again", code, stderr)
	}
	if out, stderr, code := e.runAliased("--workspace", "/mnt/home/proj", "--", "sh", "-c", "echo made > made.txt; cat README"); code != 0 || out != "the workspace\n" {
		t.Errorf("--workspace /mnt/home/proj: got exit %d, %q %q", code, out, stderr)
	}
	if b, err := os.ReadFile(filepath.Join(e.ws, "made.txt")); err != nil || string(b) != "made\n" {
		t.Errorf("a file written in /mnt/home/proj: got %q %v on the host", b, err)
	}
}
