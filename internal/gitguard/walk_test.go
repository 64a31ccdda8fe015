package gitguard

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// deepChain makes below base a chain of directories named "d", each in
// the last, until the path is within room bytes of maxPath, as a command
// can (mkdirat from the last one, never the whole path). It returns the
// last one's path and its descriptor.
func deepChain(t testing.TB, base string, room int) (string, int) {
	t.Helper()
	fd, err := unix.Open(base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	path := base
	for len(path)+2 <= maxPath-room {
		if err := unix.Mkdirat(fd, "d", 0o755); err != nil {
			t.Fatal(err)
		}
		next, err := unix.Openat(fd, "d", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		fd, path = next, path+"/d"
	}
	return path, fd
}

// manyDirs makes n directories in the directory open at fd, a thousand to
// a directory, each named by its number.
func manyDirs(t testing.TB, fd, n int) {
	t.Helper()
	for i := 0; i < n; i += 1000 {
		g := "g" + strconv.Itoa(i/1000)
		if err := unix.Mkdirat(fd, g, 0o755); err != nil {
			t.Fatal(err)
		}
		gfd, err := unix.Openat(fd, g, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		for j := i; j < i+1000 && j < n; j++ {
			if err := unix.Mkdirat(gfd, strconv.Itoa(j), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		unix.Close(gfd)
	}
}

// plantAt makes, in the directory open at fd, a repository by hand (git
// init cannot run that deep) whose config sets core.fsmonitor to pwn.
func plantAt(t *testing.T, fd int, pwn string) {
	t.Helper()
	for _, d := range []string{".git", ".git/objects", ".git/refs", ".git/refs/heads"} {
		if err := unix.Mkdirat(fd, d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, content := range map[string]string{
		".git/HEAD":   "ref: refs/heads/main\n",
		".git/config": fmt.Sprintf("[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tfsmonitor = %q\n", pwn),
	} {
		f, err := unix.Openat(fd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		unix.Write(f, []byte(content))
		unix.Close(f)
	}
}

// A repository planted at the bottom of a chain of directories near
// PATH_MAX, below thousands of others, is found and judged at the end of
// the call, in both finders; a directory whose path is longer than
// PATH_MAX is not entered (git cannot work there).
func TestDeepTreePlantedAtBottom(t *testing.T) {
	for _, walk := range []bool{false, true} {
		f := newFixture(t)
		f.walk = walk
		f.sh(userRepo)
		f.start()
		c, err := f.g.Begin()
		if err != nil {
			t.Fatal(err)
		}
		f.sh(`mkdir z`)
		deep, fd := deepChain(t, filepath.Join(f.root, "z"), 40)
		manyDirs(t, fd, 5000)
		if err := unix.Mkdirat(fd, "r", 0o755); err != nil {
			t.Fatal(err)
		}
		rfd, err := unix.Openat(fd, "r", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		plantAt(t, rfd, f.pwn())
		unix.Close(rfd)
		unix.Close(fd)
		began := time.Now()
		notes := c.End()
		t.Logf("walk=%v: %d directories deep, the end of the call took %s", walk, strings.Count(deep, "/"), time.Since(began))
		rel := strings.TrimPrefix(deep+"/r/.git", f.root+"/")
		if all := strings.Join(notes, "\n"); !strings.Contains(all, "moved "+rel+" aside") {
			t.Errorf("walk=%v: the deep repository was not judged: notes %q", walk, notes)
		}
		if f.userGit(strings.TrimPrefix(deep+"/r", f.root+"/")) {
			t.Errorf("walk=%v: the user's git ran the deep repository's fsmonitor", walk)
		}
		if notes := f.call(""); len(notes) != 0 {
			t.Errorf("walk=%v: the next call: %q", walk, notes)
		}
	}
}

// An honest large tree (50,000 directories, as node_modules holds) costs
// no refusal and no note, in both finders.
func TestLargeHonestTree(t *testing.T) {
	for _, walk := range []bool{false, true} {
		f := newFixture(t)
		f.walk = walk
		f.sh(userRepo)
		f.start()
		c, err := f.g.Begin()
		if err != nil {
			t.Fatal(err)
		}
		nm := filepath.Join(f.root, "node_modules")
		for i := 0; i < 5000; i++ {
			for _, d := range []string{"lib/util", "dist/esm", "dist/cjs", "src/a", "test/b"} {
				if err := os.MkdirAll(filepath.Join(nm, "pkg"+strconv.Itoa(i), d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
		}
		began := time.Now()
		notes := c.End()
		t.Logf("walk=%v: the end of a call that made 50,000 directories took %s", walk, time.Since(began))
		if len(notes) != 0 {
			t.Errorf("walk=%v: notes %q", walk, notes)
		}
		if notes := f.call(""); len(notes) != 0 {
			t.Errorf("walk=%v: the next call: %q", walk, notes)
		}
	}
}

// TestRedTeamShape times a real End on the red team's shape: a chain of
// about 1,900 directories, 450,000 below its end, and a repository with
// core.fsmonitor planted at the bottom (NANOSANDBOX_WALK_SHAPE=1; it
// makes them first, which takes minutes).
func TestRedTeamShape(t *testing.T) {
	modes := map[string][]bool{"1": {false, true}, "tree": {false}, "walk": {true}}[os.Getenv("NANOSANDBOX_WALK_SHAPE")]
	if modes == nil {
		t.Skip("set NANOSANDBOX_WALK_SHAPE=1 (or tree, or walk: one finder)")
	}
	for _, walk := range modes {
		f := newFixture(t)
		f.walk = walk
		f.sh(userRepo)
		f.start()
		c, err := f.g.Begin()
		if err != nil {
			t.Fatal(err)
		}
		f.sh(`mkdir z`)
		deep, fd := deepChain(t, filepath.Join(f.root, "z"), 300)
		manyDirs(t, fd, 450_000)
		plantAt(t, fd, f.pwn())
		unix.Close(fd)
		began := time.Now()
		notes := c.End()
		t.Logf("walk=%v: %d directories deep, 450,000 below: the end of the call took %s; notes %q", walk, strings.Count(deep, "/"), time.Since(began), notes)
		if f.userGit(strings.TrimPrefix(deep, f.root+"/")) {
			t.Errorf("walk=%v: the user's git ran the planted fsmonitor", walk)
		}
		os.RemoveAll(filepath.Join(f.root, "z"))
	}
}
