package sandbox

import (
	"os"
	"path/filepath"
	"testing"
)

func TestPlaceholdersNeverFollowSymlinks(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	var ps placeholders
	for _, pr := range []protection{
		{Path: filepath.Join(root, "link", "hooks"), Dir: true, Placeholder: true, Root: root},
		{Path: filepath.Join(root, "link", "config"), Placeholder: true, Root: root},
		{Path: filepath.Join(root, "link"), Dir: true, Placeholder: true, Root: root}, // the link itself: "exists"
	} {
		release, err := ps.acquire([]protection{pr})
		if err == nil {
			release()
		}
		if ents, _ := os.ReadDir(outside); len(ents) != 0 {
			t.Fatalf("%s: created %v outside the root", pr.Path, ents)
		}
	}
	if fi, err := os.Lstat(filepath.Join(root, "link")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the symlink was removed or replaced: %v %v", fi, err)
	}
}

func TestPlaceholdersCountedAndRemoved(t *testing.T) {
	root := t.TempDir()
	dir := protection{Path: filepath.Join(root, ".git"), Dir: true, Placeholder: true, Root: root}
	file := protection{Path: filepath.Join(root, "commondir"), Placeholder: true, Content: ".\n", Root: root}
	var ps placeholders
	r1, err := ps.acquire([]protection{dir, file})
	if err != nil {
		t.Fatal(err)
	}
	r2, err := ps.acquire([]protection{dir, file})
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(file.Path); err != nil || string(b) != ".\n" {
		t.Fatalf("file placeholder: %q %v", b, err)
	}
	r1()
	if _, err := os.Stat(dir.Path); err != nil {
		t.Fatalf("removed while a call still holds it: %v", err)
	}
	r2()
	for _, p := range []string{dir.Path, file.Path} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s left behind after the last call: %v", p, err)
		}
	}
	// Something the user put in place meanwhile is never removed.
	r3, _ := ps.acquire([]protection{file})
	os.WriteFile(file.Path, []byte("user's\n"), 0o644)
	r3()
	if b, _ := os.ReadFile(file.Path); string(b) != "user's\n" {
		t.Errorf("a changed file was removed or altered: %q", b)
	}
}

// TestPlaceholderHeldByAnotherCall: a stand-in another call still holds is
// seen as present by the next plan; it must stay until both calls are done.
func TestPlaceholderHeldByAnotherCall(t *testing.T) {
	root := t.TempDir()
	head := protection{Path: filepath.Join(root, "HEAD"), Placeholder: true, Root: root}
	var ps placeholders
	r1, err := ps.acquire([]protection{head})
	if err != nil {
		t.Fatal(err)
	}
	// The second call plans while the stand-in exists: it sees a file.
	_, _, r2, err := ps.plan(func() ([]protection, gitState, error) {
		if _, err := os.Stat(head.Path); err != nil {
			t.Fatalf("stand-in missing while held: %v", err)
		}
		return []protection{{Path: head.Path, Root: root}}, gitState{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	r1()
	if _, err := os.Stat(head.Path); err != nil {
		t.Fatalf("removed while the second call still uses it: %v", err)
	}
	r2()
	if _, err := os.Stat(head.Path); !os.IsNotExist(err) {
		t.Errorf("left behind after both calls: %v", err)
	}
}
