package e2e

import (
	"os"
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
