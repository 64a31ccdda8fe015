package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestReadIdentityAgreesWithGit compares the fast path with git itself.
func TestReadIdentityAgreesWithGit(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("needs git")
	}
	home := t.TempDir()
	repo := filepath.Join(home, "repo", "sub")
	os.MkdirAll(repo, 0o755)
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[user]\n\tname = Global Name\n\temail = global@example.com\n"), 0o644)
	if out, err := exec.Command("git", "init", "-q", filepath.Join(home, "repo")).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	check := func(wantName, wantEmail string) {
		t.Helper()
		name, email, ok := readIdentity(repo)
		if !ok {
			t.Fatal("readIdentity gave up")
		}
		gn, ge := askGit(git, repo)
		if name != wantName || email != wantEmail || gn != name || ge != email {
			t.Errorf("got %q %q, git says %q %q, want %q %q", name, email, gn, ge, wantName, wantEmail)
		}
	}
	check("Global Name", "global@example.com")
	os.WriteFile(filepath.Join(home, "repo", ".git", "config"), []byte("[user]\n\temail = \"local@example.com\"\n"), 0o644)
	check("Global Name", "local@example.com")
	os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[include]\n\tpath = other\n"), 0o644)
	if _, _, ok := readIdentity(repo); ok {
		t.Error("readIdentity read through an include instead of asking git")
	}
}

// A FIFO where the repository's config belongs (a command can leave one)
// must not hang the server's start.
func TestIdentityFIFOConfig(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, ".git", "config"), 0o644); err != nil {
		t.Skip(err)
	}
	t.Setenv("HOME", t.TempDir())
	done := make(chan struct{})
	go func() {
		readIdentity(dir)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("reading the identity hangs on a FIFO")
	}
}

// Where only git can read the config and there is none the server may run,
// the identity is not read; git is given no variable but those naming the
// user's config files.
func TestIdentityWithoutGit(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(home, "gitconfig"))
	os.WriteFile(filepath.Join(home, "gitconfig"), []byte("[user]\n\tname = N\n[include]\n\tpath = other\n"), 0o644)
	if n, e := gitIdentity(home, ""); n != "" || e != "" {
		t.Errorf("got %q %q with no git to ask, want none", n, e)
	}
	env := gitConfigEnv([]string{"HOME=/h", "PATH=/ws/.venv/bin:/usr/bin", "GIT_EXEC_PATH=/ws", "GIT_DIR=/ws/.g", "PAGER=/ws/p",
		"GIT_CONFIG_GLOBAL=/g", "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=user.name", "GIT_CONFIG_VALUE_0=N", "API_KEY=k"})
	want := []string{"PATH=/usr/bin:/bin", "LC_ALL=C", "GIT_TERMINAL_PROMPT=0", "HOME=/h",
		"GIT_CONFIG_GLOBAL=/g", "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=user.name", "GIT_CONFIG_VALUE_0=N"}
	if diff := cmp.Diff(want, env); diff != "" {
		t.Errorf("git's environment (-want +got):\n%s", diff)
	}
}
