package gitguard

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// renameIndexEntry renames the entry named from to to (of the same
// length) in the index at path, and writes the index's trailing checksum
// again: what a command does with a few lines of any language, since git
// itself refuses to add such a name.
func renameIndexEntry(t *testing.T, path, from, to string, sha256Objects bool) {
	t.Helper()
	if len(from) != len(to) {
		t.Fatalf("renameIndexEntry: %q and %q differ in length", from, to)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := sha1.Size
	if sha256Objects {
		n = sha256.Size
	}
	body := b[:len(b)-n]
	// The name follows its entry's fixed fields, and a NUL follows it.
	needle := append([]byte(from), 0)
	if bytes.Count(body, needle) != 1 {
		t.Fatalf("renameIndexEntry: %q is not once in %s", from, path)
	}
	body = bytes.Replace(body, needle, append([]byte(to), 0), 1)
	var sum []byte
	if sha256Objects {
		s := sha256.Sum256(body)
		sum = s[:]
	} else {
		s := sha1.Sum(body)
		sum = s[:]
	}
	if err := os.WriteFile(path, append(body, sum...), 0o644); err != nil {
		t.Fatal(err)
	}
}

// git runs git in dir for a test's setup.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=A", "GIT_AUTHOR_EMAIL=a@example.com", "GIT_COMMITTER_NAME=A", "GIT_COMMITTER_EMAIL=a@example.com"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func shIn(t *testing.T, dir, script string) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=A", "GIT_AUTHOR_EMAIL=a@example.com", "GIT_COMMITTER_NAME=A", "GIT_COMMITTER_EMAIL=a@example.com"}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
}

// Indexes honest git makes, in every form git 2.39 writes, are judged
// harmless; an index naming a path git would never have added is not,
// wherever in it the name is.
func TestCheckIndex(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("needs git on PATH")
	}
	const commit = "git init -q && echo a > a && mkdir -p d/e && echo b > d/e/b && git add . && git commit -qm one"
	for _, tt := range []struct {
		name   string
		script string
		sha256 bool
		rename [2]string // an entry renamed after the script, by hand
		harm   bool
	}{
		{name: "committed files", script: commit},
		{name: "an empty repository", script: "git init -q && git status --porcelain"},
		{name: "a merge conflict and an intent to add",
			script: commit + " && git checkout -qb t && echo t > a && git commit -qam t && git checkout -q - && echo m > a && git commit -qam m && " +
				"(git merge t >/dev/null 2>&1 || true) && echo n > n && git add -N n"},
		{name: "a split index", script: "git init -q && git config core.splitIndex true && echo a > a && echo b > b && git add . && git commit -qm one && echo c > a && git add a"},
		{name: "a sparse index",
			script: "git init -q && mkdir -p in out/deep && echo 1 > in/x && echo 2 > out/deep/y && echo 3 > top && git add . && git commit -qm one && " +
				"git sparse-checkout init --cone --sparse-index && git sparse-checkout set in"},
		{name: "SHA-256 objects", script: "git init -q --object-format=sha256 && echo a > a && git add a && git commit -qm one", sha256: true},
		{name: "index version 4", script: "git init -q && git config index.version 4 && mkdir -p x/y && echo a > x/y/a && echo b > x/y/b && git add ."},
		{name: "an untracked cache", script: commit + " && git config core.untrackedCache true && echo u > u && git status --porcelain >/dev/null"},
		{name: "skip-worktree and assume-unchanged bits", script: commit + " && git update-index --skip-worktree a && git update-index --assume-unchanged d/e/b"},
		{name: "a symbolic link and a submodule's commit",
			script: commit + " && ln -s a l && git add l && git update-index --add --cacheinfo 160000,$(git rev-parse HEAD),sub"},

		{name: "a path above the work tree", script: commit, rename: [2]string{"d/e/b", "../.b"}, harm: true},
		{name: "an absolute path", script: commit + " && git update-index --add --cacheinfo 100644,$(git rev-parse HEAD:a),zzzzzzzzzzzz", rename: [2]string{"zzzzzzzzzzzz", "/tmp/planted"}, harm: true},
		{name: "a hook", script: commit + " && git update-index --add --chmod=+x --cacheinfo 100755,$(git rev-parse HEAD:a),.zzz/zzzzz/pre-commit", rename: [2]string{".zzz/zzzzz/pre-commit", ".git/hooks/pre-commit"}, harm: true},
		{name: "a hook, in another case", script: commit + " && git update-index --add --cacheinfo 100644,$(git rev-parse HEAD:a),.zzz/config", rename: [2]string{".zzz/config", ".GiT/config"}, harm: true},
		{name: "a climb in the middle", script: commit + " && git update-index --add --cacheinfo 100644,$(git rev-parse HEAD:a),d/zz/zz/x", rename: [2]string{"d/zz/zz/x", "d/../../x"}, harm: true},
		{name: "an NTFS name for .git", script: commit + " && git update-index --add --cacheinfo 100644,$(git rev-parse HEAD:a),zzz~1/config", rename: [2]string{"zzz~1/config", "GIT~1/config"}, harm: true},
		{name: "a climb in a split index's shared part", script: "git init -q && git config core.splitIndex true && echo a > a && mkdir zz && echo b > zz/b && git add . && git commit -qm one && echo c > a && git add a",
			rename: [2]string{"zz/b", "../b"}, harm: true},
		{name: "a sparse directory above the work tree",
			script: "git init -q && mkdir -p in zzzzz && echo 1 > in/x && echo 2 > zzzzz/y && git add . && git commit -qm one && " +
				"git sparse-checkout init --cone --sparse-index && git sparse-checkout set in",
			rename: [2]string{"zzzzz/", "../ab/"}, harm: true},
		{name: "a SHA-256 repository's climb", script: "git init -q --object-format=sha256 && mkdir zz && echo a > zz/a && git add . && git commit -qm one",
			sha256: true, rename: [2]string{"zz/a", "../a"}, harm: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			shIn(t, dir, tt.script)
			gitdir := filepath.Join(dir, ".git")
			var shared []string
			if tt.rename[0] != "" {
				path := filepath.Join(gitdir, "index")
				shared, _ = filepath.Glob(filepath.Join(gitdir, "sharedindex.*"))
				if len(shared) == 1 && strings.Contains(tt.name, "shared") {
					// The split index names its shared part by checksum:
					// the command writes both again, as git would.
					renameIndexEntry(t, shared[0], tt.rename[0], tt.rename[1], tt.sha256)
					relinkSharedIndex(t, gitdir, shared[0])
				} else {
					renameIndexEntry(t, path, tt.rename[0], tt.rename[1], tt.sha256)
				}
				// The user's git reads it as it is.
				if out := gitIn(t, dir, "ls-files", "--sparse"); !strings.Contains(out, tt.rename[1]) {
					t.Fatalf("git does not list %q from the index; the case tests nothing:\n%s", tt.rename[1], out)
				}
			}
			shared, _ = filepath.Glob(filepath.Join(gitdir, "sharedindex.*"))
			if _, err := os.Stat(filepath.Join(gitdir, "index")); os.IsNotExist(err) {
				return // nothing for git to read: an absent index is no element
			}
			why, err := checkIndexWithGit(git, filepath.Join(gitdir, "index"), shared, tt.sha256)
			if err != nil {
				t.Fatalf("git could not read it: %v", err)
			}
			if got := why != ""; got != tt.harm {
				t.Fatalf("judged harmful: %v (%q), want %v", got, why, tt.harm)
			}
			if tt.harm && !strings.Contains(why, strings.TrimSuffix(tt.rename[1], "/")) {
				t.Errorf("the verdict %q does not name %q", why, tt.rename[1])
			}
		})
	}
}

// relinkSharedIndex renames a rewritten shared index after its new
// checksum and writes that name into the index's link extension, as git
// does when it writes a split index.
func relinkSharedIndex(t *testing.T, gitdir, shared string) {
	t.Helper()
	b, err := os.ReadFile(shared)
	if err != nil {
		t.Fatal(err)
	}
	oldHex := strings.TrimPrefix(filepath.Base(shared), "sharedindex.")
	newSum := b[len(b)-sha1.Size:]
	newHex := ""
	for _, c := range newSum {
		newHex += string("0123456789abcdef"[c>>4]) + string("0123456789abcdef"[c&15])
	}
	if err := os.Rename(shared, filepath.Join(gitdir, "sharedindex."+newHex)); err != nil {
		t.Fatal(err)
	}
	old := make([]byte, sha1.Size)
	for i := range old {
		old[i] = unhex(oldHex[2*i])<<4 | unhex(oldHex[2*i+1])
	}
	index := filepath.Join(gitdir, "index")
	ib, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	body := ib[:len(ib)-sha1.Size]
	if bytes.Count(body, old) != 1 {
		t.Fatal("relinkSharedIndex: the shared index's checksum is not once in the index")
	}
	body = bytes.Replace(body, old, newSum, 1)
	s := sha1.Sum(body)
	if err := os.WriteFile(index, append(body, s[:]...), 0o644); err != nil {
		t.Fatal(err)
	}
}

func unhex(c byte) byte {
	if c >= 'a' {
		return c - 'a' + 10
	}
	return c - '0'
}

// plantIndexHook adds to the repository in dir an index entry that the
// user's git checkout -- . writes as .git/hooks/pre-commit: a hook that
// leaves the marker.
func plantIndexHook(t *testing.T, f *fixture, dir string) {
	t.Helper()
	f.sh(`cd ` + dir + ` && h=$(printf '#!/bin/sh\n%s\n' "$PWN" | git hash-object -w --stdin) && git update-index --add --chmod=+x --cacheinfo "100755,$h,.zzz/zzzzz/pre-commit"`)
	renameIndexEntry(t, filepath.Join(f.root, dir, ".git", "index"), ".zzz/zzzzz/pre-commit", ".git/hooks/pre-commit", false)
}

// userCheckoutCommit is what a user does after an agent's session: throw
// away what it left in the work tree, then commit.
func userCheckoutCommit(f *fixture, dir string) bool {
	os.Remove(f.marker)
	for _, args := range [][]string{{"checkout", "--", "."}, {"commit", "-q", "--allow-empty", "-m", "user"}} {
		cmd := exec.Command(f.git, append([]string{"-C", filepath.Join(f.root, dir)}, args...)...)
		cmd.Env = f.env()
		cmd.Run()
	}
	_, err := os.Lstat(f.marker)
	return err == nil
}

// An index entry a command renames to a path git never adds (a hook, a
// file above the work tree) is written there by the user's git checkout:
// the index is moved aside when the call ends, in a trusted repository and
// in one the call made, watched and walked; an honest index stays.
func TestEndMovesPlantedIndexAside(t *testing.T) {
	const setup = "git init -q && echo a > a && git add a && git commit -qm one"
	ctl := newFixture(t)
	ctl.sh(setup)
	plantIndexHook(t, ctl, ".")
	if !userCheckoutCommit(ctl, ".") {
		t.Fatal("control: the planted index entry did not run as a hook in the user's git; the test tests nothing")
	}
	for _, walk := range []bool{false, true} {
		for _, made := range []bool{false, true} {
			name := map[bool]string{false: "trusted", true: "made in the call"}[made] + map[bool]string{false: ", watched", true: ", walked"}[walk]
			t.Run(name, func(t *testing.T) {
				f := newFixture(t)
				f.walk = walk
				dir := "."
				if made {
					dir = "sub"
				}
				f.sh(setup)
				f.start()
				if notes := f.call("echo b > a && git add a && git commit -qm two && git status --porcelain"); len(notes) != 0 {
					t.Fatalf("an honest commit was judged: %q", notes)
				}
				c, err := f.g.Begin()
				if err != nil {
					t.Fatal(err)
				}
				if made {
					f.sh("mkdir sub && cd sub && " + setup)
				}
				plantIndexHook(t, f, dir)
				notes := c.End()
				want := "moved .git/index aside to .git/index.quarantined-by-nanosandbox: its index .git/index names a path git refuses to have in an index (\"Ignoring path .git/hooks/pre-commit\"): the user's own git checkout or restore would write there, and git add or commit -a read it, wherever it leads, outside the sandbox too; the sandbox made a new index from HEAD in its place"
				if made {
					want = "moved sub/.git aside to sub/.git.quarantined-by-nanosandbox: its index sub/.git/index names a path git refuses"
				}
				if !strings.Contains(strings.Join(notes, "\n"), want) {
					t.Fatalf("notes %q, want one holding %q", notes, want)
				}
				if userCheckoutCommit(f, dir) {
					t.Fatal("the planted index entry ran as a hook in the user's git")
				}
				if !made {
					// The index made in its place is HEAD's: the user's
					// commit deletes nothing, and git status is clean.
					if out := gitIn(t, f.root, "show", "--stat", "--format=", "HEAD"); out != "" {
						t.Fatalf("the user's commit changed files: %q", out)
					}
					if out := gitIn(t, f.root, "status", "--porcelain"); out != "" {
						t.Fatalf("git status says %q", out)
					}
				}
			})
		}
	}
}

// spliceIndex writes out: benign's header and entries, which git reads
// one after the other, then hostile's entries hidden in a cache-tree
// extension after a valid root, an IEOT extension whose one block points
// at them, and an EOIE extension: git reading with threads takes its
// entries from the IEOT block. Both are index version 2, of as many
// entries.
func spliceIndex(t *testing.T, benign, hostile, out string) {
	t.Helper()
	entries := func(path string) ([]byte, uint32, int) {
		d, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(d[:4]) != "DIRC" || binary.BigEndian.Uint32(d[4:8]) != 2 {
			t.Fatalf("%s: not an index of version 2", path)
		}
		n := binary.BigEndian.Uint32(d[8:12])
		off := 12
		for range n {
			flags := binary.BigEndian.Uint16(d[off+60 : off+62])
			hdr := 62
			if flags&0x4000 != 0 {
				hdr += 2
			}
			nl := bytes.IndexByte(d[off+hdr:], 0)
			off += (hdr + nl + 8) &^ 7
		}
		return d, n, off
	}
	b, bn, boff := entries(benign)
	h, hn, hoff := entries(hostile)
	if bn != hn {
		t.Fatalf("spliceIndex: %d and %d entries", bn, hn)
	}
	ext := func(sig string, payload []byte) []byte {
		x := append([]byte(sig), 0, 0, 0, 0)
		binary.BigEndian.PutUint32(x[4:], uint32(len(payload)))
		return append(x, payload...)
	}
	o := append([]byte(nil), b[:boff]...)
	start := len(o)
	pre := []byte("\x00-1 0\n")
	tree := ext("TREE", append(append([]byte(nil), pre...), h[12:hoff]...))
	var ieotPayload [12]byte
	binary.BigEndian.PutUint32(ieotPayload[0:], 1)
	binary.BigEndian.PutUint32(ieotPayload[4:], uint32(start+8+len(pre)))
	binary.BigEndian.PutUint32(ieotPayload[8:], hn)
	ieot := ext("IEOT", ieotPayload[:])
	o = append(append(o, tree...), ieot...)
	hh := sha1.New()
	hh.Write(tree[:8])
	hh.Write(ieot[:8])
	var eoie [4]byte
	binary.BigEndian.PutUint32(eoie[:], uint32(start))
	o = append(o, ext("EOIE", append(eoie[:], hh.Sum(nil)...))...)
	sum := sha1.Sum(o)
	if err := os.WriteFile(out, append(o, sum[:]...), 0o644); err != nil {
		t.Fatal(err)
	}
}

// An index that git reads one way in order and another with threads
// (index.threads, which scalar sets): the check reads it both ways.
func TestCheckIndexThreadedReading(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("needs git on PATH")
	}
	dir := t.TempDir()
	shIn(t, dir, "git init -q && echo a > a && git add a && git commit -qm one && h=$(git hash-object -w a) && "+
		"GIT_INDEX_FILE=.git/benign git read-tree HEAD && GIT_INDEX_FILE=.git/benign git update-index --add --cacheinfo 100644,$h,zzzzzzzzzzzzzzzzzzzzz && "+
		"GIT_INDEX_FILE=.git/hostile git read-tree HEAD && GIT_INDEX_FILE=.git/hostile git update-index --add --chmod=+x --cacheinfo 100755,$h,.zzz/zzzzz/pre-commit")
	gitdir := filepath.Join(dir, ".git")
	renameIndexEntry(t, filepath.Join(gitdir, "hostile"), ".zzz/zzzzz/pre-commit", ".git/hooks/pre-commit", false)
	spliceIndex(t, filepath.Join(gitdir, "benign"), filepath.Join(gitdir, "hostile"), filepath.Join(gitdir, "index"))
	if out := gitIn(t, dir, "-c", "index.threads=1", "ls-files"); strings.Contains(out, ".git/hooks") {
		t.Fatalf("control: read in order, git lists %q", out)
	}
	if out := gitIn(t, dir, "-c", "index.threads=4", "ls-files"); !strings.Contains(out, ".git/hooks/pre-commit") {
		t.Fatalf("control: read with threads, git lists %q, not the planted name: the test tests nothing", out)
	}
	why, err := checkIndexWithGit(git, filepath.Join(gitdir, "index"), nil, false)
	if err != nil || why == "" {
		t.Errorf("judged harmless (%q, %v): a git that reads with threads writes .git/hooks/pre-commit", why, err)
	}
}

// Of a split index's shared parts, git reads the one the index names: only
// that one is copied, so others beside it (old ones, a FIFO, a directory
// of such a name) cost nothing.
func TestCheckIndexReadsOnlyTheSharedPartGitNames(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("needs git on PATH")
	}
	dir := t.TempDir()
	shIn(t, dir, "git init -q && git config core.splitIndex true && echo a > a && git add a && git commit -qm one && echo b > a && git add a && "+
		"mkfifo .git/sharedindex.0123456789012345678901234567890123456789 && mkdir .git/sharedindex.x")
	gitdir := filepath.Join(dir, ".git")
	shared, _ := filepath.Glob(filepath.Join(gitdir, "sharedindex.*"))
	if len(shared) != 3 {
		t.Fatalf("shared parts %q, want 3", shared)
	}
	if why, err := checkIndexWithGit(git, filepath.Join(gitdir, "index"), shared, false); why != "" || err != nil {
		t.Errorf("an honest split index judged %q, %v", why, err)
	}
}

// The index the guard makes anew runs no hook: git runs post-index-change
// on every index it writes, and a repository's hooks can lie where
// commands write (a --writable hooks path).
func TestRebuildIndexRunsNoHook(t *testing.T) {
	f := newFixture(t)
	f.sh("git init -q && echo a > a && git add a && git commit -qm one && mkdir -p hooks && git config core.hooksPath \"$PWD/hooks\"")
	f.cfg.Exempt = []string{filepath.Join(f.root, "hooks")}
	f.start()
	c, err := f.g.Begin()
	if err != nil {
		t.Fatal(err)
	}
	f.sh(`printf '#!/bin/sh\n%s\n' "$PWN" > hooks/post-index-change && chmod +x hooks/post-index-change`)
	plantIndexHook(t, f, ".")
	os.Remove(f.marker)
	notes := c.End()
	if !strings.Contains(strings.Join(notes, "\n"), "the sandbox made a new index from HEAD") {
		t.Fatalf("notes %q, want a new index made", notes)
	}
	if _, err := os.Lstat(f.marker); err == nil {
		t.Error("making the new index ran the repository's post-index-change hook")
	}
}

// A tree that expands past git's memory bound: the new index is not made,
// git's lock goes with it, and the note says to run git reset.
func TestRebuildIndexOfATreeBomb(t *testing.T) {
	f := newFixture(t)
	f.sh("git init -q && echo a > a && git add a && git commit -qm one")
	f.start()
	c, err := f.g.Begin()
	if err != nil {
		t.Fatal(err)
	}
	f.sh(`b=$(echo x | git hash-object -w --stdin) && t=$(printf '100644 blob %s\ta\n100644 blob %s\tb\n' $b $b | git mktree) &&
for i in $(seq 1 24); do t=$(printf '040000 tree %s\ta\n040000 tree %s\tb\n' $t $t | git mktree); done &&
git update-ref HEAD $(git commit-tree $t -m bomb)`)
	plantIndexHook(t, f, ".")
	began := time.Now()
	notes := c.End()
	if d := time.Since(began); d > 30*time.Second {
		t.Errorf("the call's end took %v", d)
	}
	all := strings.Join(notes, "\n")
	if !strings.Contains(all, "moved .git/index aside") || !strings.Contains(all, "run git reset there first") {
		t.Errorf("notes %q, want the index moved aside and git reset named", notes)
	}
	if _, err := os.Lstat(filepath.Join(f.root, ".git", "index.lock")); err == nil {
		t.Error("git's lock was left")
	}
}

// The scratch directories a killed server's index checks left go at the
// next start: this user's, over an hour old, never through a symlink.
func TestRemoveStaleScratch(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	old, fresh := filepath.Join(tmp, "nanosandbox-index-1"), filepath.Join(tmp, "nanosandbox-index-2")
	target := filepath.Join(tmp, "keep")
	for _, d := range []string{old + "/git", fresh, target} {
		os.MkdirAll(d, 0o700)
	}
	os.Symlink(target, filepath.Join(tmp, "nanosandbox-index-3"))
	then := time.Now().Add(-2 * time.Hour)
	for _, p := range []string{old, target, filepath.Join(tmp, "nanosandbox-index-3")} {
		os.Chtimes(p, then, then)
	}
	stamp := filepath.Join(t.TempDir(), "swept")
	removeStaleScratch(stamp)
	if _, err := os.Lstat(old); err == nil {
		t.Error("an old scratch directory stayed")
	}
	for _, p := range []string{fresh, target, filepath.Join(tmp, "nanosandbox-index-3")} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s went: %v", p, err)
		}
	}
	// Within the hour of the last look, no look; after it, one.
	os.MkdirAll(old, 0o700)
	os.Chtimes(old, then, then)
	removeStaleScratch(stamp)
	if _, err := os.Lstat(old); err != nil {
		t.Error("a second look within the hour")
	}
	os.Chtimes(stamp, then, then)
	removeStaleScratch(stamp)
	if _, err := os.Lstat(old); err == nil {
		t.Error("no look an hour after the last")
	}
}

// writeSplitIndex writes in gitdir a split index that reads one way or
// another by git's thread count: its main part holds the benign entries,
// and its link extension only where its EOIE extension points (hidden in a
// cache-tree payload, for a reader of the extensions after the entries);
// its shared part holds, read in order, the benign entries but the first
// and the hostile one, and where its IEOT says, the benign ones. A git
// reading the main part with 2 threads, or more, and the shared part in
// order sees the hostile entry.
func writeSplitIndex(t *testing.T, gitdir string, benign [][3]string, hostile [3]string) {
	t.Helper()
	entry := func(e [3]string) []byte {
		mode, _ := strconv.ParseUint(e[0], 8, 32)
		b := make([]byte, 40)
		binary.BigEndian.PutUint32(b[24:], uint32(mode))
		oid, _ := hex.DecodeString(e[1])
		b = append(b, oid...)
		b = binary.BigEndian.AppendUint16(b, uint16(min(len(e[2]), 0xfff)))
		b = append(b, e[2]...)
		return append(b, make([]byte, 8-len(b)%8)...)
	}
	ext := func(sig string, payload []byte) []byte {
		return append(binary.BigEndian.AppendUint32([]byte(sig), uint32(len(payload))), payload...)
	}
	finish := func(body []byte) []byte { s := sha1.Sum(body); return append(body, s[:]...) }
	eoie := func(offset int, headers []byte) []byte {
		s := sha1.Sum(headers)
		return ext("EOIE", append(binary.BigEndian.AppendUint32(nil, uint32(offset)), s[:]...))
	}
	header := func(n int) []byte {
		return binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32([]byte("DIRC"), 2), uint32(n))
	}
	sortByName := func(es [][3]string) { sort.Slice(es, func(i, j int) bool { return es[i][2] < es[j][2] }) }
	sortByName(benign)
	planted := append(append([][3]string(nil), benign[1:]...), hostile)
	sortByName(planted)
	pre := []byte("\x00-1 0\n")
	var seq, hidden []byte
	for _, e := range planted {
		seq = append(seq, entry(e)...)
	}
	for _, e := range benign {
		hidden = append(hidden, entry(e)...)
	}
	hdr := header(len(planted))
	posHidden := len(hdr) + len(seq) + 8 + len(pre)
	ieot := ext("IEOT", binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, 1), uint32(posHidden)), uint32(len(planted))))
	posIeot := posHidden + len(hidden)
	tree := ext("TREE", append(append(append([]byte(nil), pre...), hidden...), ieot...))
	shared := finish(append(append(append(hdr, seq...), tree...), eoie(posIeot, ieot[:8])...))
	sid := hex.EncodeToString(shared[len(shared)-20:])
	ewah := append(binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, 0), 1), make([]byte, 12)...)
	sidBytes, _ := hex.DecodeString(sid)
	link := ext("link", append(append(sidBytes, ewah...), ewah...))
	mhdr := header(len(benign))
	var ents []byte
	for _, e := range benign {
		ents = append(ents, entry(e)...)
	}
	posLink := len(mhdr) + len(ents) + 8 + len(pre)
	mtree := ext("TREE", append(append([]byte(nil), pre...), link...))
	main := finish(append(append(append(mhdr, ents...), mtree...), eoie(posLink, link[:8])...))
	if err := os.WriteFile(filepath.Join(gitdir, "sharedindex."+sid), shared, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(gitdir, "index"), main, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A split index whose main part names its shared part only for a git
// that reads it with 2 threads, and whose shared part reads otherwise in
// order than where its IEOT points: each of its files is read every way.
func TestCheckIndexSplitReadEveryWay(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("needs git on PATH")
	}
	dir := t.TempDir()
	shIn(t, dir, "git init -q && echo a > a && echo b > b && git add a b && git commit -qm one")
	var benign [][3]string
	for _, line := range strings.Split(strings.TrimSpace(gitIn(t, dir, "ls-files", "-s")), "\n") {
		meta, name, _ := strings.Cut(line, "\t")
		f := strings.Fields(meta)
		benign = append(benign, [3]string{f[0], f[1], name})
	}
	gitdir := filepath.Join(dir, ".git")
	writeSplitIndex(t, gitdir, benign, [3]string{"100755", benign[0][1], ".git/hooks/pre-commit"})
	if out := gitIn(t, dir, "-c", "index.threads=2", "ls-files"); !strings.Contains(out, ".git/hooks/pre-commit") {
		t.Fatalf("control: read with 2 threads, git lists %q, not the planted name: the test tests nothing", out)
	}
	for _, n := range []string{"1", "4"} {
		if out := gitIn(t, dir, "-c", "index.threads="+n, "ls-files"); strings.Contains(out, ".git/hooks") {
			t.Fatalf("control: read with %s threads, git lists %q", n, out)
		}
	}
	shared, _ := filepath.Glob(filepath.Join(gitdir, "sharedindex.*"))
	why, err := checkIndexWithGit(git, filepath.Join(gitdir, "index"), shared, false)
	if err != nil || why == "" {
		t.Errorf("judged harmless (%q, %v): a git that reads it with 2 threads writes .git/hooks/pre-commit", why, err)
	}
}

// fileHolds finds a needle wherever it lies, across the reads' seams too.
func TestFileHolds(t *testing.T) {
	dir := t.TempDir()
	for _, at := range []int{-1, 0, 1, 256<<10 - 2, 256<<10 - 1, 256 << 10, 3*(256<<10) + 5, 4*(256<<10) - 4} {
		b := make([]byte, 4*(256<<10))
		if at >= 0 {
			copy(b[at:], "EOIE")
		}
		p := filepath.Join(dir, "f")
		os.WriteFile(p, b, 0o644)
		got, err := fileHolds(p, []byte("EOIE"))
		if err != nil || got != (at >= 0) {
			t.Errorf("at %d: %v, %v", at, got, err)
		}
	}
}
