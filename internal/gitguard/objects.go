package gitguard

import (
	"compress/zlib"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Git does not check an object's hash when it reads it: a command that
// rewrites a loose object of a trusted repository (the file is the user's,
// so chmod u+w and a write do it), or adds a pack whose index lists an
// existing id at other content, or rewrites an index, a commit-graph or a
// multi-pack-index, gives the user's git other content under the same id.
// Their checkout then writes it (a core.hooksPath hook the next commit
// runs), and git show and diff show it for review. So at the end of a
// call, what changed in the object store of every repository trusted when
// the calls running began is checked against git's own addressing: a
// loose object must hash to its name (hashed here, with the hash its name
// is as long as: git looks up only names of its own format), and packs,
// their indexes, commit-graphs and multi-pack-indexes are verified by the
// host's git. What fails is moved aside.
//
// What changed is what has a ctime at or after the calls began: a write,
// a rename into place and a chmod all move it, and no command can set it
// back. Git's honest writes are new files (a commit's loose objects, a
// gc's pack); its freshening of an object that exists already moves a
// file's times too, which costs that file's check.

// objectsBudget bounds the checks of one call's end: past it, what is left
// is moved aside unchecked (a command that writes gigabytes of objects
// must not hold the result for long).
const objectsBudget = 60 * time.Second

// maxObjectFiles bounds the names read in one fan-out or pack directory:
// git's gc keeps a few thousand loose objects.
const maxObjectFiles = 1 << 20

// objectStores lists the object directories of the repositories trusted
// now, each once, that lie inside a root (not in a grant made writable by
// name: neither protected nor judged).
func (g *Guard) objectStores() []string {
	seen := map[string]bool{}
	var out []string
	for _, els := range g.trusted {
		for _, e := range els {
			if e.role != roleAlternates {
				continue
			}
			dir := filepath.Dir(filepath.Dir(e.path)) // objects/info/alternates
			if seen[dir] {
				continue
			}
			seen[dir] = true
			if k, _, _ := g.place(dir); k == inside {
				out = append(out, dir)
			}
		}
	}
	sort.Strings(out)
	return out
}

// checkObjects checks what changed since the calls running began in each
// object store of stores, and moves aside what fails, with a note each.
func (g *Guard) checkObjects(stores []string) []string {
	if len(stores) == 0 {
		return nil
	}
	deadline := time.Now().Add(objectsBudget)
	var notes []string
	for _, dir := range stores {
		notes = append(notes, g.checkStore(dir, deadline)...)
	}
	return notes
}

// checkStore checks one object store: loose objects first, so that git,
// verifying the rest, reads none that is wrong.
func (g *Guard) checkStore(dir string, deadline time.Time) []string {
	_, root, _ := g.place(dir)
	var notes []string
	aside := func(path, why, after string) {
		if id, err := lstatIdent(path); err == nil && !id.exists() {
			return // removed meanwhile, by the git of a call still running
		}
		moved, err := moveAside(root, path)
		if err != nil {
			g.logf("git guard: move aside %s: %v", path, err)
			notes = append(notes, fmt.Sprintf("git: %s: %s; moving it aside failed, so tell the user not to run git there until it is removed", g.show(path), why))
			return
		}
		g.logf("git guard: moved %s aside to %s: %s", path, moved, why)
		notes = append(notes, fmt.Sprintf("git: moved %s aside to %s: %s%s", g.show(path), g.show(moved), why, after))
	}
	const lost = "; git now finds that object missing where it had it before (better than other content under its id): tell the user, who can fetch it again or restore it from a clone"
	// Loose objects: objects/xx/<38 or 62 hex digits>.
	loose, err := g.looseChanged(dir)
	if err != nil {
		g.logf("git guard: objects %s: %v", dir, err)
		return nil
	}
	for _, rel := range loose {
		d, n := rel[:2], rel[3:]
		p := filepath.Join(dir, rel)
		why := ""
		if time.Now().After(deadline) {
			why = "there were too many objects written to check in time, so it was not read"
		} else if err := checkLoose(p, d+n, deadline); err != nil {
			why = "it is a loose object that does not hold what its name says (" + err.Error() + "): git would read that content under the id, in a checkout and in git show or diff"
		}
		if why != "" {
			aside(p, why, lost)
		}
	}
	// Packs, then what maps ids into them.
	packDir := filepath.Join(dir, "pack")
	names, _ := readNames(packDir)
	changed := func(p string) bool {
		id, err := lstatIdent(p)
		return err == nil && id.exists() && id.Ctime >= g.since
	}
	gitDir := filepath.Dir(dir)
	for _, n := range names {
		base, ok := strings.CutSuffix(n, ".idx")
		if !ok {
			continue
		}
		idx := filepath.Join(packDir, n)
		pack := filepath.Join(packDir, base+".pack")
		rev := filepath.Join(packDir, base+".rev")
		if !changed(idx) && !changed(pack) && !changed(rev) {
			continue
		}
		// Each pack gets the time its size takes, past the budget if
		// need be: a gc's one pack holds every object of the repository,
		// and moved aside unread, all of them would be missing.
		limit := packTimeout(pack)
		if d := time.Now().Add(limit); d.After(deadline) {
			deadline = d
		}
		before := pairIdent(idx, pack)
		why := ""
		if err := g.verifyGit(gitDir, deadline, limit, "verify-pack", idx); err != nil {
			if pairIdent(idx, pack) != before {
				// Replaced or removed meanwhile: another running call's
				// git (a gc removes old packs); what it leaves is
				// checked at that call's end.
				continue
			}
			why = "git verify-pack found that this pack index and its pack do not agree (" + err.Error() + "): git would read other content under an id they list, in a checkout and in git show or diff"
		}
		if why != "" {
			// Git finds a pack only through its index.
			aside(idx, why, "; git no longer finds the objects of "+g.show(pack)+": those only there are missing to it (better than other content under their ids): tell the user")
		}
	}
	if midx := filepath.Join(packDir, "multi-pack-index"); changed(midx) {
		if err := g.verifyGit(gitDir, deadline, gitTimeout*4, "multi-pack-index", "--object-dir="+dir, "verify"); err != nil {
			aside(midx, "git multi-pack-index verify found it does not agree with the packs ("+err.Error()+"): git would read other content under an id it lists", "; git reads each pack through its own index instead")
		}
	}
	var graphs []string
	for _, p := range []string{filepath.Join(dir, "info", "commit-graph"), filepath.Join(dir, "info", "commit-graphs", "commit-graph-chain")} {
		if changed(p) {
			graphs = append(graphs, p)
		}
	}
	chain, _ := readNames(filepath.Join(dir, "info", "commit-graphs"))
	for _, n := range chain {
		if p := filepath.Join(dir, "info", "commit-graphs", n); strings.HasSuffix(n, ".graph") && changed(p) {
			graphs = append(graphs, p)
		}
	}
	if len(graphs) > 0 {
		if err := g.verifyGit(gitDir, deadline, gitTimeout*4, "commit-graph", "verify", "--object-dir="+dir); err != nil {
			for _, p := range graphs {
				aside(p, "git commit-graph verify found the commit-graph does not agree with the commits ("+err.Error()+"): git takes a commit's tree and parents from it", "; git reads the commits themselves instead")
			}
		}
	}
	return notes
}

// looseChanged lists the loose objects of the object directory dir
// ("xx/<hex>") with a ctime at or after g.since: those the watcher
// cannot vouch for are stat'ed.
func (g *Guard) looseChanged(dir string) ([]string, error) {
	if g.objw != nil {
		if out, ok := g.objw.looseChanged(dir, g.since, g.sinceMono); ok {
			return out, nil
		}
	}
	fan, err := readNames(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range fan {
		if len(d) != 2 || !isHex(d) {
			continue
		}
		for _, n := range changedIn(filepath.Join(dir, d), g.since) {
			if (len(n) == 38 || len(n) == 62) && isHex(n) {
				out = append(out, d+"/"+n) // else not a name git looks up: a temporary file, or one moved aside
			}
		}
	}
	return out, nil
}

// packTimeout is how long git may take to verify the pack at path: 20 s,
// and a second for every 4 MiB (git index-pack verifies tens of MiB a
// second on this 2-core machine).
func packTimeout(path string) time.Duration {
	id, _ := lstatIdent(path)
	return gitTimeout*4 + time.Duration(id.Size/(4<<20))*time.Second
}

// pairIdent is what is at a and at b.
func pairIdent(a, b string) [2]ident {
	ia, _ := lstatIdent(a)
	ib, _ := lstatIdent(b)
	return [2]ident{ia, ib}
}

// verifyGit runs a verifying git command in the repository at gitDir, the
// common dir of a trusted repository whose config was judged, as
// rebuildIndex runs git: no config but the repository's, no hook, no
// replacement objects (refs/replace would stand in for what is checked).
func (g *Guard) verifyGit(gitDir string, deadline time.Time, limit time.Duration, args ...string) error {
	if g.cfg.Git == "" {
		return errors.New("there is no git on this machine to check it")
	}
	if left := time.Until(deadline); left < limit {
		limit = left
	}
	env := []string{
		"PATH=/usr/bin:/bin", "HOME=/nonexistent", "LC_ALL=C",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_NO_REPLACE_OBJECTS=1",
		"GIT_DIR=" + gitDir,
	}
	_, err := runGitFor(limit, g.cfg.Git, args[0], gitDir, env, nil, io.Discard, append([]string{"-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null",
		"-c", "core.packedGitWindowSize=32m", "-c", "core.packedGitLimit=256m", "-c", "core.deltaBaseCacheLimit=32m", "-c", "core.commitGraph=true"}, args...)...)
	return err
}

// checkLoose checks that the loose object at path holds what its name
// (hex, as its path spells it) says: that its inflated content hashes to
// it. The hash is the one the name is as long as.
func checkLoose(path, name string, deadline time.Time) error {
	want, err := hex.DecodeString(name)
	if err != nil {
		return err
	}
	var h hash.Hash
	switch len(want) {
	case sha1.Size:
		h = sha1.New()
	case sha256.Size:
		h = sha256.New()
	default:
		return errors.New("not an object name")
	}
	fd, err := openNoSymlinks(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC)
	if err != nil {
		return fmt.Errorf("it cannot be opened safely: %w", err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return errors.New("it is not a regular file")
	}
	zr, err := zlib.NewReader(f)
	if err != nil {
		return errors.New("it is not zlib data")
	}
	if _, err := io.Copy(h, &deadlineReader{r: zr, deadline: deadline}); err != nil {
		return errors.New("it does not inflate")
	}
	if got := h.Sum(nil); string(got) != string(want) {
		return errors.New("its content hashes to " + hex.EncodeToString(got))
	}
	return nil
}

// deadlineReader fails its reads once deadline has passed: a small file
// can inflate to terabytes.
type deadlineReader struct {
	r        io.Reader
	deadline time.Time
	n        int
}

func (d *deadlineReader) Read(p []byte) (int, error) {
	if d.n++; d.n%64 == 0 && time.Now().After(d.deadline) {
		return 0, errTimeout
	}
	return d.r.Read(p)
}

// changedIn lists the names in the directory dir (no symlink followed to
// it) whose ctime is at or after since, each stat'ed through the
// directory: one lookup, not a whole path's, for each of the thousands of
// loose objects a repository keeps before gc packs them.
func changedIn(dir string, since int64) []string {
	fd, err := openNoSymlinks(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NONBLOCK|unix.O_CLOEXEC)
	if err != nil {
		return nil // gone, or no directory: git finds nothing in it either
	}
	f := os.NewFile(uintptr(fd), dir)
	defer f.Close()
	names, _ := f.Readdirnames(maxObjectFiles)
	var out []string
	for _, n := range names {
		var st unix.Stat_t
		if err := unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			continue // gone since it was listed
		}
		if identOf(&st).Ctime >= since {
			out = append(out, n)
		}
	}
	return out
}

// readNames lists a directory's names, without following a symlink to it.
func readNames(dir string) ([]string, error) {
	fd, err := openNoSymlinks(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NONBLOCK|unix.O_CLOEXEC)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
			return nil, nil
		}
		return nil, err
	}
	defer unix.Close(fd)
	return namesAt(fd)
}

// namesAt lists the directory open at fd, through a descriptor of its own
// (fd's offset is left alone), at most maxObjectFiles names.
func namesAt(fd int) ([]string, error) {
	dfd, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(dfd), ".")
	defer f.Close()
	names, err := f.Readdirnames(maxObjectFiles)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return names, err
}

func isHex(s string) bool {
	return strings.Trim(s, "0123456789abcdef") == ""
}
