package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// What is carried reads back, through git, as what the user set; nothing
// outside the carried keys is written.
func TestGitSettingsFiles(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("needs git")
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	os.WriteFile(filepath.Join(home, "ign"), []byte(".env\n"), 0o644)
	config, ignore, _ := gitSettingsFiles([]setting{
		{"core", "", "excludesfile", "~/ign"},
		{"init", "", "defaultbranch", `odd "name"\with` + "\ttab"},
		{"filter", `lf"s`, "clean", "git-lfs clean -- %f"},
		{"safe", "", "directory", "/a"}, {"safe", "", "directory", "/b"},
		{"url", "https://tok@x/", "insteadof", "https://x/"},
		{"credential", "", "helper", "store"},
		{"http", "", "extraheader", "Authorization: token"},
		{"core", "", "pager", "less"},
	}, "", func(string) bool { return true })
	if string(ignore) != ignoreHeader+".env\n" {
		t.Errorf("ignore %q, want the user's excludes file", ignore)
	}
	f := filepath.Join(t.TempDir(), "config")
	os.WriteFile(f, config, 0o644)
	out, err := exec.Command(git, "config", "--file", f, "--list").CombinedOutput()
	if err != nil {
		t.Fatalf("git cannot read what was written: %v\n%s\n%s", err, out, config)
	}
	want := "init.defaultbranch=odd \"name\"\\with\ttab\nfilter.lf\"s.clean=git-lfs clean -- %f\nsafe.directory=/a\nsafe.directory=/b\n"
	if string(out) != want {
		t.Errorf("git reads back %q, want %q", out, want)
	}
	for _, secret := range []string{"tok", "store", "Authorization", "pager", "excludesfile"} {
		if strings.Contains(strings.ToLower(string(config)), strings.ToLower(secret)) {
			t.Errorf("%q was carried:\n%s", secret, config)
		}
	}
}

// What a command leaves in the private home where the server reads: a
// FIFO does not block the read, whenever it was swapped in.
func TestReadRegularInRefusesAFIFO(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "config"), 0o644); err != nil {
		t.Skip(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	done := make(chan error, 1)
	go func() { _, err := readRegularIn(root, "config", 1<<20); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Error("a FIFO was read as a file")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("reading a FIFO blocked")
	}
	if ours(root, "config", "#") || replaceIn(root, "config", []byte("x")) != nil {
		t.Error("ours or replaceIn with a FIFO in the way")
	}
}
