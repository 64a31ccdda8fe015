package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSeatbeltCanon checks the resolver against a real macOS volume: what
// Seatbelt is given must be the path the kernel names.
func TestSeatbeltCanon(t *testing.T) {
	dir := t.TempDir()
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(real, "/private/") {
		t.Logf("the test directory %s is not under /private", real)
	}
	if err := os.MkdirAll(filepath.Join(dir, "Mixed/Sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "Mixed/Sub/File.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("Mixed/Sub", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	caseInsensitive := false
	if _, err := os.Stat(filepath.Join(dir, "mixed/sub/file.txt")); err == nil {
		caseInsensitive = true
	}
	for _, tt := range []struct {
		name, path string
		follow     bool
		want       string
	}{
		{"/tmp is /private/tmp", "/tmp", true, "/private/tmp"},
		{"a file", filepath.Join(dir, "Mixed/Sub/File.txt"), false, filepath.Join(real, "Mixed/Sub/File.txt")},
		{"a symlink, kept", filepath.Join(dir, "link"), false, filepath.Join(real, "link")},
		{"a symlink, followed", filepath.Join(dir, "link"), true, filepath.Join(real, "Mixed/Sub")},
		{"through a symlink", filepath.Join(dir, "link/File.txt"), false, filepath.Join(real, "Mixed/Sub/File.txt")},
		{"absent, below what exists", filepath.Join(dir, "Mixed/absent/x"), false, filepath.Join(real, "Mixed/absent/x")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := seatbeltCanon(tt.path, tt.follow); got != tt.want {
				t.Errorf("seatbeltCanon(%q, %v) = %q, want %q", tt.path, tt.follow, got, tt.want)
			}
		})
	}
	t.Run("case as the volume spells it", func(t *testing.T) {
		if !caseInsensitive {
			t.Skip("this volume is case-sensitive")
		}
		got := seatbeltCanon(filepath.Join(dir, "mixed/SUB/file.TXT"), false)
		if want := filepath.Join(real, "Mixed/Sub/File.txt"); got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	})
}

// TestCallProcesses: a process started after a call began is a candidate,
// one started before is not, nor is this process.
func TestCallProcesses(t *testing.T) {
	old, err := os.StartProcess("/bin/sleep", []string{"sleep", "30"}, &os.ProcAttr{})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Kill()
	time.Sleep(2100 * time.Millisecond)
	since := time.Now()
	young, err := os.StartProcess("/bin/sleep", []string{"sleep", "30"}, &os.ProcAttr{})
	if err != nil {
		t.Fatal(err)
	}
	defer young.Kill()
	pids, err := callProcesses(since, 0)
	if err != nil {
		t.Fatal(err)
	}
	has := map[int]bool{}
	for _, p := range pids {
		has[p] = true
	}
	if !has[young.Pid] || has[old.Pid] || has[os.Getpid()] {
		t.Errorf("candidates %v: want %d, not %d nor this process %d", pids, young.Pid, old.Pid, os.Getpid())
	}
}
