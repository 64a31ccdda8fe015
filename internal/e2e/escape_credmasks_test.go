package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A credential a dotfiles link leads into the workspace (GNU stow's
// layout: ~/.pypirc -> proj/pypi/.pypirc) is masked by its path: from the
// sixth sandbox red-team round, one call renamed the directory above it
// (mv pypi pypi2) and the next read it at its new path. The directories
// above such a mask are pinned as a carve-out's are: the rename fails, and
// no later call reads it, one-shot or in a server.
func TestEscapeCredentialMaskRenamed(t *testing.T) {
	for _, mode := range []string{"one-shot", "server"} {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t)
			e.write("pypi/.pypirc", "[pypi]\npassword = "+secretValue+"-pypi\n", 0o600)
			e.write("pypi/sub/notes", "notes\n", 0o644)
			if err := os.Symlink("proj/pypi/.pypirc", filepath.Join(e.home, ".pypirc")); err != nil {
				t.Fatal(err)
			}
			calls := []string{
				`cat pypi/.pypirc; mv pypi pypi2; mv pypi/sub pypi/sub2; echo renamed`,
				`cat pypi2/.pypirc pypi/.pypirc pypi2/sub/../.pypirc 2>&1; ls -a pypi pypi2`,
			}
			var all string
			if mode == "one-shot" {
				for _, c := range calls {
					out, stderr, _ := e.sh(c)
					all += out + stderr
				}
			} else {
				s := e.serve()
				for _, c := range calls {
					res, _ := s.sh(t, c)
					all += text(res)
				}
			}
			if strings.Contains(all, secretValue) {
				t.Errorf("the masked credential was read after a rename:\n%s", all)
			}
			if _, err := os.Stat(filepath.Join(e.ws, "pypi", ".pypirc")); err != nil {
				t.Errorf("the directory holding the credential moved on the host: %v\n%s", err, all)
			}
		})
	}
}

// A credential link that leads into /proc (the user's own process there
// is theirs, so the owner's rule let it through) planned a mask at a path
// the sandbox's own /proc does not hold, and every call of every server
// reading that home failed at setup: any local user could stop everyone's
// servers with a link in their own home. No mask is planned in /proc,
// /sys or /dev; the call runs.
func TestCredentialLinkIntoProc(t *testing.T) {
	e := newEnv(t)
	for _, l := range []struct{ name, to string }{
		{".pypirc", "/proc/self"},
		{".kube", "/proc/1"},
		{".docker", "/sys/kernel"},
		{".npmrc", "/dev/null"},
	} {
		p := filepath.Join(e.home, l.name)
		os.RemoveAll(p)
		if err := os.Symlink(l.to, p); err != nil {
			t.Fatal(err)
		}
	}
	out, stderr, code := e.sh(`echo ran`)
	if code != 0 || out != "ran\n" {
		t.Fatalf("status %d, stdout %q, stderr:\n%s", code, out, stderr)
	}
	s := e.serve()
	for i := 0; i < 2; i++ {
		if _, res := s.sh(t, "echo ran"); res.Stdout != "ran\n" {
			t.Fatalf("call %d: %+v", i, res)
		}
	}
}
