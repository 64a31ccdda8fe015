package e2e

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
)

// The private homes are listed with their workspace and size, and pruned
// only where the workspace is gone; --check names the workspace's own.
func TestHomesListAndPrune(t *testing.T) {
	e := newEnv(t)
	other := filepath.Join(e.home, "other")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, ws := range []string{e.ws, other} {
		if _, stderr, code := e.runRaw("--workspace", ws, "--", "sh", "-c", "head -c 3000 /dev/zero > $HOME/cache"); code != 0 {
			t.Fatalf("%s: exit %d %s", ws, code, stderr)
		}
	}
	out, stderr, code := e.runRaw("--check", "--workspace", e.ws)
	if code != 0 || !strings.Contains(out, "private home  "+e.privateHome()+" (3 KB;") {
		t.Errorf("--check: exit %d\n%s%s", code, out, stderr)
	}
	os.RemoveAll(other)
	out, _, code = e.runRaw("homes")
	if code != 0 || strings.Count(out, "\n") != 3 || !strings.Contains(out, "[workspace gone]") || !strings.Contains(out, e.ws+"  last used") {
		t.Errorf("homes: exit %d\n%s", code, out)
	}
	out, _, code = e.runRaw("homes", "--prune")
	if code != 0 || !strings.Contains(out, "removed ") || !strings.Contains(out, "its workspace "+other+" is gone") {
		t.Errorf("homes --prune: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(e.privateHome(), "cache")); err != nil {
		t.Errorf("the live workspace's home went: %v", err)
	}
	if out, _, _ := e.runRaw("homes"); strings.Contains(out, "gone") {
		t.Errorf("after pruning:\n%s", out)
	}
	if _, stderr, code := e.runRaw("homes", "--bogus"); code != 2 || !strings.Contains(stderr, "error: homes: unexpected argument") {
		t.Errorf("homes --bogus: exit %d %s", code, stderr)
	}
}

// A workspace two levels inside the home: a sibling written beside it
// (../NOTES.md, git worktree add ../x) would land in the private home,
// where the user never sees it; it fails instead, and the result says why.
// The private home stays writable elsewhere.
func TestWorkspaceSiblingsRefused(t *testing.T) {
	e := newEnv(t)
	ws := filepath.Join(e.home, "src", "proj")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	e.own(ws)
	e.ws = ws
	e.write("README", "the workspace\n", 0o644)
	e.gitRepo()
	// A library beside it, granted read-only: shown, and the parent
	// stays read-only around it.
	lib := filepath.Join(e.home, "src", "lib")
	e.write(filepath.Join(lib, "README"), "lib\n", 0o644)
	s := e.serve("--read-only", lib)
	res, out := s.sh(t, `echo x > ../NOTES.md; echo rc=$?; ls -a ..; cat ../lib/README; git worktree add -q ../feature 2>&1; echo wt=$?; mkdir -p ~/.cache/tool && echo ok > ~/.cache/tool/f && cat ~/.cache/tool/f`)
	if !strings.Contains(out.Stdout, "rc=2") && !strings.Contains(out.Stdout, "rc=1") {
		t.Errorf("a write beside the workspace succeeded: %s", text(res))
	}
	if strings.Contains(out.Stdout, "NOTES.md") || strings.Contains(out.Stdout, "wt=0") {
		t.Errorf("a sibling was made: %s", text(res))
	}
	if !strings.Contains(out.Stdout, "\nlib\n") {
		t.Errorf("the read-only sibling is not shown: %s", text(res))
	}
	if !strings.Contains(out.Stdout, "\nok\n") {
		t.Errorf("the private home is no longer writable: %s", text(res))
	}
	if !strings.Contains(text(res), "is outside the workspace") {
		t.Errorf("no note explains the refused write: %s", text(res))
	}
	if _, err := os.Stat(filepath.Join(e.privateHome(), "src", "NOTES.md")); err == nil {
		t.Error("the write landed in the private home")
	}
}

// With HOME set elsewhere than the account's home (a client's scratch
// HOME, a snap's), the account's home is hidden too: the user's files and
// the state of their other servers, logins in private homes included.
func TestAccountHomeHiddenWhereHomeDiffers(t *testing.T) {
	u, err := user.Current()
	if err != nil || u.HomeDir == "" {
		t.Skip("needs the account's home directory")
	}
	e := newEnv(t) // HOME is the test's own temporary directory
	if strings.HasPrefix(e.home, u.HomeDir+"/") {
		t.Skip("the test's HOME lies in the account's home")
	}
	marker := filepath.Join(u.HomeDir, fmt.Sprintf(".nsb-account-home-%d", os.Getpid()))
	if err := os.WriteFile(marker, []byte("ACCOUNT-HOME-FILE\n"), 0o644); err != nil {
		t.Skipf("cannot write in the account's home: %v", err)
	}
	defer os.Remove(marker)
	out, _, _ := e.sh("cat " + marker + " 2>/dev/null; echo ---; ls -a " + u.HomeDir + " 2>/dev/null")
	if _, listing, _ := strings.Cut(out, "---"); strings.Contains(out, "ACCOUNT-HOME-FILE") || strings.Contains(listing, filepath.Base(marker)) {
		t.Errorf("the account's home is visible inside: %q", out)
	}
}
