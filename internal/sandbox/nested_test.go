package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func gitIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=T", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// TestGitlinksFromRealIndexes parses indexes git wrote, in every version
// and with both hashes.
func TestGitlinksFromRealIndexes(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	for _, tt := range []struct {
		name    string
		version string
		sha256  bool
	}{{"v2", "2", false}, {"v3", "3", false}, {"v4", "4", false}, {"v4 sha256", "4", true}, {"v2 sha256", "2", true}} {
		t.Run(tt.name, func(t *testing.T) {
			w := t.TempDir()
			args := []string{"init", "-q"}
			if tt.sha256 {
				args = append(args, "--object-format=sha256")
			}
			gitIn(t, w, args...)
			for _, d := range []string{"a/deep/dir", "z"} {
				os.MkdirAll(filepath.Join(w, d), 0o755)
				os.WriteFile(filepath.Join(w, d, "f.txt"), []byte(d), 0o644)
			}
			for _, sub := range []string{"libs/one", "two"} {
				os.MkdirAll(filepath.Join(w, sub), 0o755)
				gitIn(t, filepath.Join(w, sub), args...)
				gitIn(t, filepath.Join(w, sub), "commit", "-q", "--allow-empty", "-m", "s")
			}
			gitIn(t, w, "add", "-A")
			if tt.version == "3" {
				gitIn(t, w, "update-index", "--index-version", "3", "--skip-worktree", "z/f.txt") // an extended flag
			} else {
				gitIn(t, w, "update-index", "--index-version", tt.version)
			}
			index, err := os.ReadFile(filepath.Join(w, ".git", "index"))
			if err != nil {
				t.Fatal(err)
			}
			cfg, _ := os.ReadFile(filepath.Join(w, ".git", "config"))
			got, err := gitlinks(index, hashLength(cfg))
			if err != nil {
				t.Fatal(err)
			}
			sort.Strings(got)
			if diff := cmp.Diff([]string{"libs/one", "two"}, got); diff != "" {
				t.Errorf("gitlinks (-want +got):\n%s", diff)
			}
			pop := populatedGitlinks(hostFS{}, w, filepath.Join(w, ".git"))
			if len(pop) != 2 {
				t.Errorf("populated: %v", pop)
			}
		})
	}
}

func TestGitlinksRejectsGarbage(t *testing.T) {
	for _, b := range [][]byte{nil, []byte("DIRC"), []byte("DIRC\x00\x00\x00\x09\x00\x00\x00\x01"), []byte("DIRC\x00\x00\x00\x02\x00\x00\x00\x05short")} {
		if _, err := gitlinks(b, 20); err == nil {
			t.Errorf("%q: no error", b)
		}
	}
}

func FuzzGitlinks(f *testing.F) {
	f.Add([]byte("DIRC\x00\x00\x00\x04\x00\x00\x00\x01"), 20)
	f.Fuzz(func(t *testing.T, b []byte, hashLen int) {
		if hashLen != 20 && hashLen != 32 {
			return
		}
		gitlinks(b, hashLen) // must not panic
	})
}

func TestDangerousGitDir(t *testing.T) {
	for _, tt := range []struct {
		name  string
		files []string
		cfg   string
		want  bool
	}{
		{"what git init writes", []string{"/g/hooks/pre-commit.sample"}, "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n[remote \"origin\"]\n\turl = x\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n", false},
		{"fsmonitor", nil, "[core]\n\tfsmonitor = touch /tmp/x\n", true},
		{"a textconv", nil, "[diff \"x\"]\n\ttextconv = cat\n", true},
		{"submodule update command", nil, "[submodule \"a\"]\n\tupdate = !sh\n", true},
		{"a hook", []string{"/g/hooks/post-checkout"}, "", true},
		{"a commondir", []string{"/g/commondir"}, "", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fs := newFakeFS(append(tt.files, "/g/config")...)
			fs.files["/g/config"] = tt.cfg
			if got := dangerousGitDir(fs, "/g") != ""; got != tt.want {
				t.Errorf("got %v (%q), want %v", got, dangerousGitDir(fs, "/g"), tt.want)
			}
		})
	}
}
