package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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
	config, ignore := gitSettingsFiles([]setting{
		{"core", "", "excludesfile", "~/ign"},
		{"init", "", "defaultbranch", `odd "name"\with` + "\ttab"},
		{"filter", `lf"s`, "clean", "git-lfs clean -- %f"},
		{"safe", "", "directory", "/a"}, {"safe", "", "directory", "/b"},
		{"url", "https://tok@x/", "insteadof", "https://x/"},
		{"credential", "", "helper", "store"},
		{"http", "", "extraheader", "Authorization: token"},
		{"core", "", "pager", "less"},
	})
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
