package gitguard

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// The red team's shape, scaled to a limit lowered for the test: a call
// plants a repository with core.fsmonitor and makes a tree deeper and
// larger than the end of a call walks (a chain of directories near
// PATH_MAX, thousands below it). The end gave up and judged nothing: the
// planted repository stayed live for the user's git status until the user
// had removed the tree and a later call judged it. What the walk found
// before the limit is judged at the end of the call now, and later calls
// stay refused, with a note that says where the user must not run git.
func TestLimitHitStillJudges(t *testing.T) {
	defer func(n int) { walkDirsLimit = n }(walkDirsLimit)
	for _, walk := range []bool{false, true} {
		f := newFixture(t)
		f.walk = walk
		f.sh(userRepo)
		f.start()
		c, err := f.g.Begin()
		if err != nil {
			t.Fatal(err)
		}
		f.sh(`git init -q a && git -C a config core.fsmonitor "$PWN" && mkdir z`)
		deep, fd := deepChain(t, filepath.Join(f.root, "z"), 20)
		manyDirs(t, fd, 3000)
		unix.Close(fd)
		walkDirsLimit = strings.Count(deep, "/") + 1000
		notes := c.End()
		walkDirsLimit = maxWalkDirs
		all := strings.Join(notes, "\n")
		t.Logf("walk=%v: notes %q", walk, notes)
		if !strings.Contains(all, "moved a/.git aside") {
			t.Errorf("walk=%v: the repository found before the limit was not judged: notes %q", walk, notes)
		}
		if !strings.Contains(all, "could not check") || !strings.Contains(all, "git status") {
			t.Errorf("walk=%v: the note does not say what the user must not run: %q", walk, notes)
		}
		if f.userGit("a") {
			t.Errorf("walk=%v: the user's git ran the fsmonitor a call planted before the limit", walk)
		}
		walkDirsLimit = strings.Count(deep, "/") + 1000
		if _, err := f.g.Begin(); err == nil {
			t.Fatalf("walk=%v: a call began while the roots cannot be checked", walk)
		}
		walkDirsLimit = maxWalkDirs
		os.RemoveAll(filepath.Join(f.root, "z")) // the user, told to
		f.call("")
		if f.userGit("a") {
			t.Errorf("walk=%v: the user's git ran the fsmonitor once calls went on", walk)
		}
	}
}
