package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// The home bound elsewhere while the server runs (mount --bind ~ /mnt/x):
// the next calls hide it there too, though the spare helper started
// before the mount, and where no filesystem was mounted twice at the
// start. From a red-team round: the plan took the mount table of the
// start for the rest of the server's life.
func TestEscapeHomeBoundLater(t *testing.T) {
	linuxOnly(t, "bind mounts")
	if os.Getuid() != 0 {
		t.Skip("needs root: only root mounts in the host's mount namespace")
	}
	e := newEnv(t)
	// Readable by all, so that only the mount keeps a root caller's
	// commands (another uid inside) from reading it.
	if err := os.WriteFile(filepath.Join(e.home, "shared.txt"), []byte("shared "+secretValue+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(e.home, 0o755)
	s := e.serve()
	if res, out := s.sh(t, "true"); res.IsError {
		t.Fatalf("first call: %s", out.Error)
	}
	at, err := os.MkdirTemp("/mnt", "nsb-bound-")
	if err != nil {
		t.Skipf("no directory for the mount in /mnt: %v", err)
	}
	t.Cleanup(func() { os.Remove(at) })
	if err := unix.Mount(e.home, at, "", unix.MS_BIND, ""); err != nil {
		t.Skipf("cannot bind mount here: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(at, unix.MNT_DETACH) })
	if b, err := os.ReadFile(filepath.Join(at, "notes.txt")); err != nil || !strings.Contains(string(b), secretValue) {
		t.Fatalf("the control: the bound home does not read on the host: %q %v", b, err)
	}
	for i := range 3 {
		res, _ := s.sh(t, `cat `+filepath.Join(at, "shared.txt")+` `+filepath.Join(at, ".ssh/id_ed25519")+`; ls -A `+at+`; echo call-ran`)
		got := text(res)
		if strings.Contains(got, secretValue) || strings.Contains(got, "notes.txt") {
			t.Errorf("call %d after the home was bound at %s: it shows there:\n%s", i+1, at, got)
		}
		if !strings.Contains(got, "call-ran") {
			t.Errorf("call %d: %s", i+1, got)
		}
	}
}
