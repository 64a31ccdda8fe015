package gitguard

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// A command can also keep its edits out of the user's own git status and
// git diff through the index, with no name in it that git would refuse:
//
//   - git update-index --assume-unchanged F, or --skip-worktree F, and
//     then an edit of F: git no longer looks at F at all;
//   - an edit of F, and then F's entry given F's new stat data (any
//     command can write .git/index): git trusts stat data that matches and
//     never reads F, so F shows as clean.
//
// So when a call made or changed a trusted repository's index, git lists
// it as it was when the calls running began (held open from then: git
// replaces an index by renaming a new one over it, so the old one stays
// readable) and as it is now, each entry with its flags and stat data,
// and then, in a copy, git itself clears the assume-unchanged bits the
// call set, and the skip-worktree bits it set on files that are in the
// work tree (git sparse-checkout sets them on files it removed), and
// clears the stat data of every entry the call made or changed: the
// user's next git status then compares those files' content, once, and
// writes their stat data again. The copy replaces the index, taken with
// git's own lock. Honest git add and git commit cost the user's git a
// re-read of the files they staged; an index no call changed costs
// nothing but a descriptor held open while calls run.

// heldIndex is a trusted index as it was when the calls running began.
// What it holds is known still while its size and trailing checksum are
// as they were: git replaces an index whole, which changes the old one's
// ctime (one link fewer) but nothing in it, and git refuses an index
// whose checksum is not that of its content, so a command that wrote
// into it in place has changed its checksum, or made git refuse it. An
// index that git wrote with no checksum (index.skipHash) is not known.
type heldIndex struct {
	f      *os.File // nil when there was none
	size   int64
	sum    [32]byte // its last bytes: the checksum
	absent bool     // there was no index
}

// indexTrailer reads the last bytes of f, of size size: its checksum
// (SHA-1 or SHA-256) and what precedes it; ok false when it cannot be
// read, or is no checksum (all zero).
func indexTrailer(f *os.File, size int64) (sum [32]byte, ok bool) {
	if size < int64(len(sum)) {
		return sum, false
	}
	if n, err := f.ReadAt(sum[:], size-int64(len(sum))); n != len(sum) || err != nil && err != io.EOF {
		return sum, false
	}
	var zero [20]byte
	return sum, !bytes.Equal(sum[len(sum)-20:], zero[:])
}

// maxHeldIndexes bounds the indexes held open while calls run; a change
// to any other is judged as one whose earlier state is unknown.
const maxHeldIndexes = 256

// holdIndexes holds every trusted index in the roots open as it is now,
// when no call runs and calls are about to.
func (g *Guard) holdIndexes() {
	g.releaseIndexes()
	g.held = map[string]heldIndex{}
	for _, c := range sortedKeys(g.trusted) {
		if c == global || c.bare {
			continue
		}
		for _, e := range g.trusted[c] {
			if e.role != roleIndex || e.odd != "" {
				continue
			}
			if k, _, _ := g.place(e.path); k != inside {
				continue
			}
			if len(g.held) >= maxHeldIndexes {
				return
			}
			if !e.id.exists() {
				g.held[e.path] = heldIndex{absent: true}
				continue
			}
			fd, err := openNoSymlinks(e.path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC)
			if err != nil {
				continue
			}
			f := os.NewFile(uintptr(fd), e.path)
			var st unix.Stat_t
			if err := unix.Fstat(fd, &st); err != nil || identOf(&st) != withoutSum(e.id) {
				f.Close() // changed since it was read: not the trusted one
				continue
			}
			sum, ok := indexTrailer(f, st.Size)
			if !ok {
				f.Close()
				continue
			}
			g.held[e.path] = heldIndex{f: f, size: st.Size, sum: sum}
		}
	}
}

// releaseIndexes closes what holdIndexes opened.
func (g *Guard) releaseIndexes() {
	for _, h := range g.held {
		if h.f != nil {
			h.f.Close()
		}
	}
	g.held = nil
}

func withoutSum(id ident) ident {
	id.Sum = 0
	return id
}

// indexRecord is one entry of an index as git ls-files -v -s --debug
// lists it.
type indexRecord struct {
	tag  byte   // H, S, M..., lowercase when assume-unchanged
	info string // "mode oid stage\tname", as git update-index --index-info reads it
	name string
	all  string // the whole record: flags, mode, id, stage and stat data
	// stat says git takes the entry's stat data for what the file is
	// (its size is not 0: git compares the content of an entry whose
	// recorded size is 0, git's own mark of a racily clean one).
	stat bool
}

func (r indexRecord) assumed() bool { return r.tag >= 'a' && r.tag <= 'z' }
func (r indexRecord) skipped() bool { return r.tag == 'S' || r.tag == 's' }

// parseIndexListing reads git ls-files -z -v -s --debug: each record is
// "TAG MODE OID STAGE\tNAME", a NUL, then five lines of stat data, the
// last "  size: N\tflags: X".
func parseIndexListing(b []byte) ([]indexRecord, error) {
	var out []indexRecord
	for len(b) > 0 {
		i := bytes.IndexByte(b, 0)
		if i < 2 || b[1] != ' ' {
			return nil, errors.New("git ls-files: unexpected record")
		}
		head := string(b[:i])
		b = b[i+1:]
		end := 0
		for n := 0; n < 5; n++ {
			j := bytes.IndexByte(b[end:], '\n')
			if j < 0 || !bytes.HasPrefix(b[end:], []byte("  ")) {
				return nil, errors.New("git ls-files: unexpected stat data")
			}
			end += j + 1
		}
		debug := string(b[:end])
		b = b[end:]
		meta, name, ok := strings.Cut(head[2:], "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 3 {
			return nil, fmt.Errorf("git ls-files: unexpected record %s", quoteCapped(head))
		}
		last := debug[strings.LastIndexByte(debug[:len(debug)-1], '\n')+1:]
		out = append(out, indexRecord{
			tag: head[0], info: head[2:], name: name, all: head + "\x00" + debug,
			stat: !strings.HasPrefix(last, "  size: 0\t"),
		})
	}
	return out, nil
}

// key is an entry's name and stage, which name it once in an index.
func (r indexRecord) key() string {
	f := strings.Fields(r.info[:strings.IndexByte(r.info, '\t')])
	return r.name + "\x00" + f[2]
}

// listIndex has git list the index at path, with the shared index files
// of a split index (shared), in a scratch git directory made in dir.
func listIndex(git, dir, path string, shared []string, sha256 bool) (gitdir, work string, recs []indexRecord, err error) {
	gitdir, work, err = indexScratch(dir, sha256)
	if err != nil {
		return "", "", nil, err
	}
	size, err := copyRegular(path, filepath.Join(gitdir, "index"), maxIndexBytes)
	if err != nil {
		return "", "", nil, err
	}
	for _, s := range shared {
		n, err := copyRegular(s, filepath.Join(gitdir, filepath.Base(s)), maxIndexBytes)
		if err != nil {
			return "", "", nil, err
		}
		size += n
	}
	recs, err = lsIndex(git, gitdir, work, size)
	return gitdir, work, recs, err
}

// lsIndex lists the index of the scratch git directory gitdir.
func lsIndex(git, gitdir, work string, size int64) ([]indexRecord, error) {
	var out bytes.Buffer
	w := &limitedWriter{w: &out, max: min(32*size+1<<20, maxListingBytes)}
	stderr, err := runGit(git, "ls-files", work, scratchEnv(gitdir, work), nil, w, "ls-files", "-z", "-v", "-s", "--debug")
	if err == nil && stderr != "" {
		err = errors.New(stderr) // git says what it could not read, and goes on without it
	}
	if err != nil {
		return nil, err
	}
	return parseIndexListing(out.Bytes())
}

// scratchEnv is the environment of git in a scratch git directory: it
// reads no config of the user's, and none of the repository's.
func scratchEnv(gitdir, work string) []string {
	return []string{
		"PATH=/usr/bin:/bin", "HOME=/nonexistent", "LC_ALL=C",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_DIR=" + gitdir, "GIT_WORK_TREE=" + work,
	}
}

// indexScratch makes a git directory of nothing but a config and HEAD in
// dir, and an empty work tree beside it.
func indexScratch(dir string, sha256 bool) (gitdir, work string, err error) {
	gitdir, work = filepath.Join(dir, "git"), filepath.Join(dir, "work")
	for _, d := range []string{dir, gitdir, work, filepath.Join(gitdir, "objects"), filepath.Join(gitdir, "refs")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return "", "", err
		}
	}
	format := "[core]\n\trepositoryformatversion = 0\n"
	if sha256 {
		format = "[core]\n\trepositoryformatversion = 1\n[extensions]\n\tobjectFormat = sha256\n"
	}
	for name, content := range map[string]string{"HEAD": "ref: refs/heads/main\n", "config": format} {
		if err := os.WriteFile(filepath.Join(gitdir, name), []byte(content), 0o600); err != nil {
			return "", "", err
		}
	}
	return gitdir, work, nil
}

// heldRecords lists the index at path as the calls running found it
// (holdIndexes), or reports known false when that is not known: not held,
// or written in place since. Unlisted says it is known, but git could
// not list it in a scratch git directory: the user's own index is one
// this way of reading cannot read (a sparse index, which git expands
// from objects).
func (g *Guard) heldRecords(dir, path string, shared []string, sha256 bool) (recs []indexRecord, known, unlisted bool) {
	h, ok := g.held[path]
	switch {
	case !ok:
		return nil, false, false
	case h.absent:
		return nil, true, false
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(h.f.Fd()), &st); err != nil || st.Size != h.size {
		return nil, false, false
	}
	if sum, ok := indexTrailer(h.f, h.size); !ok || sum != h.sum {
		return nil, false, false
	}
	gitdir, work, err := indexScratch(dir, sha256)
	if err != nil {
		return nil, false, false
	}
	out, err := os.OpenFile(filepath.Join(gitdir, "index"), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, false, false
	}
	n, err := io.Copy(out, io.NewSectionReader(h.f, 0, maxIndexBytes))
	if err == nil && n == h.size {
		// What was copied is what was checked: git reads the copy
		// only if its content is what the checksum says.
		if sum, ok := indexTrailer(out, n); !ok || sum != h.sum {
			err = errors.New("changed while copied")
		}
	}
	if cerr := out.Close(); err != nil || cerr != nil || n != h.size {
		return nil, false, false
	}
	for _, s := range shared {
		m, err := copyRegular(s, filepath.Join(gitdir, filepath.Base(s)), maxIndexBytes)
		if err != nil {
			return nil, false, false
		}
		n += m
	}
	recs, err = lsIndex(g.cfg.Git, gitdir, work, n)
	if err != nil {
		return nil, false, true
	}
	return recs, true, false
}

// hiddenEdits makes git show again, in the index e of the trusted
// repository cand, what a call hid from the user's git status and git
// diff (see the top of this file). It returns a note when it cleared
// flags the call set; clearing stat data is no news.
func (g *Guard) hiddenEdits(cand candidate, e element, els []element) (string, error) {
	if g.cfg.Git == "" || !e.id.isReg() {
		return "", nil
	}
	_, root, _ := g.place(e.path)
	tmp, err := os.MkdirTemp("", "nanosandbox-index-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	sha := g.sha256Objects(els)
	var shared []string
	for _, en := range e.entries {
		shared = append(shared, filepath.Join(filepath.Dir(e.path), en.name))
	}
	if id, err := lstatIdent(e.path); err != nil || withoutSum(id) != withoutSum(e.id) {
		return "", fmt.Errorf("%w: it changed while it was read", errIndexBusy)
	}
	before, known, unlisted := g.heldRecords(filepath.Join(tmp, "before"), e.path, shared, sha)
	if unlisted {
		// Not checked, rather than the user's index lost at every call
		// (moved aside, and made anew from HEAD without its sparse
		// checkout): a limit of this check, said in the log.
		g.logf("git guard: %s: the index as the calls found it cannot be listed without the repository's objects; edits a call hid in it are not looked for", e.path)
		return "", nil
	}
	gitdir, work, now, err := listIndex(g.cfg.Git, filepath.Join(tmp, "now"), e.path, shared, sha)
	if err != nil {
		return "", err
	}
	was := map[string]indexRecord{}
	for _, r := range before {
		was[r.key()] = r
	}
	worktree := filepath.Dir(cand.entry)
	for _, w := range els {
		if w.role == roleWorktree && w.from == "" && w.odd == "" {
			worktree = w.path // core.worktree
			break
		}
	}
	present := func(name string) bool {
		id, err := lstatIdent(filepath.Join(worktree, name))
		return err != nil || id.exists()
	}
	var info bytes.Buffer
	var assume, noAssume, skip, noSkip []string
	for _, r := range now {
		b, had := was[r.key()]
		if had && b.all == r.all {
			continue
		}
		newAssumed := r.assumed() && !(had && b.assumed())
		newSkipped := r.skipped() && !(had && b.skipped()) && present(r.name)
		if r.stat {
			// Given anew (no stat data, no flags): the flags that stay
			// are set again.
			info.WriteString(r.info)
			info.WriteByte(0)
			if r.assumed() && !newAssumed {
				assume = append(assume, r.name)
			}
			if r.skipped() && !newSkipped {
				skip = append(skip, r.name)
			}
		}
		if newAssumed {
			noAssume = append(noAssume, r.name)
		}
		if newSkipped {
			noSkip = append(noSkip, r.name)
		}
	}
	if info.Len() == 0 && len(noAssume) == 0 && len(noSkip) == 0 {
		return "", nil
	}
	env := scratchEnv(gitdir, work)
	// A whole index, not split: a shared part written here would not be
	// beside the index it is copied back to. No hook runs on git's own.
	cfg := []string{"-c", "core.splitIndex=false", "-c", "core.hooksPath=/dev/null", "-c", "index.sparse=false"}
	run := func(stdin []byte, args ...string) error {
		_, err := runGit(g.cfg.Git, "update-index", work, env, bytes.NewReader(stdin), io.Discard, append(append(cfg[:len(cfg):len(cfg)], "update-index"), args...)...)
		return err
	}
	paths := func(names []string) []byte {
		var b bytes.Buffer
		for _, n := range names {
			b.WriteString(n)
			b.WriteByte(0)
		}
		return b.Bytes()
	}
	if info.Len() > 0 {
		if err := run(info.Bytes(), "-z", "--index-info"); err != nil {
			return "", err
		}
	}
	for _, step := range []struct {
		flag  string
		names []string
	}{{"--assume-unchanged", assume}, {"--skip-worktree", skip}, {"--no-assume-unchanged", noAssume}, {"--no-skip-worktree", noSkip}} {
		if len(step.names) == 0 {
			continue
		}
		if err := run(paths(step.names), step.flag, "-z", "--stdin"); err != nil {
			return "", err
		}
	}
	if err := installIndex(root, e, filepath.Join(gitdir, "index")); err != nil {
		return "", err
	}
	if len(noAssume)+len(noSkip) == 0 {
		return "", nil
	}
	var what []string
	if len(noAssume) > 0 {
		what = append(what, "assume-unchanged on "+someNames(noAssume))
	}
	if len(noSkip) > 0 {
		what = append(what, "skip-worktree on "+someNames(noSkip))
	}
	note := "git: cleared in " + g.show(e.path) + " the bits " + strings.Join(what, " and ") + ", set by a call: with them, the user's own git status and git diff show no edit of those files; git shows them again"
	if !known {
		note += " (the sandbox could not tell which bits were there before the call, so it cleared every one)"
	}
	return note, nil
}

// errIndexBusy is an index git is writing, or wrote while the guard read
// it: the user's own git status, or git in another call. It is read again.
var errIndexBusy = errors.New("git is writing the index")

// showHiddenEdits is hiddenEdits, tried again for a second while git
// writes the index (it holds the lock for milliseconds): e is read
// again each time. Past that, the index is moved aside as one that
// cannot be checked.
func (g *Guard) showHiddenEdits(cand candidate, e element, els []element) (string, error) {
	deadline := time.Now().Add(time.Second)
	for {
		note, err := g.hiddenEdits(cand, e, els)
		if !errors.Is(err, errIndexBusy) || time.Now().After(deadline) {
			return note, err
		}
		time.Sleep(50 * time.Millisecond)
		e = g.res.indexElement(filepath.Dir(e.path))
		if e.odd != "" {
			return "", errors.New(e.odd)
		}
	}
}

// someNames names a few of names, for a note.
func someNames(names []string) string {
	sort.Strings(names)
	var q []string
	for i, n := range names {
		if i == 3 {
			q = append(q, "and "+strconv.Itoa(len(names)-3)+" more")
			break
		}
		q = append(q, quoteName(n))
	}
	return strings.Join(q, ", ")
}

// installIndex puts the index file from in place of e, git's way: it
// writes index.lock beside it (made exclusively, as git makes it, so the
// user's git, or git in another call, waits) and renames it over the
// index, if the index is still as e found it.
func installIndex(root string, e element, from string) error {
	parent, name, err := openParent(root, e.path)
	if err != nil {
		return err
	}
	defer unix.Close(parent)
	var st unix.Stat_t
	if err := unix.Fstatat(parent, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("stat %q: %w", e.path, err)
	}
	lock := name + ".lock"
	fd, err := unix.Openat(parent, lock, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(st.Mode&0o777))
	if errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("%w: its lock is there", errIndexBusy)
	}
	if err != nil {
		return fmt.Errorf("create %q: %w", e.path+".lock", err)
	}
	out := os.NewFile(uintptr(fd), e.path+".lock")
	in, err := os.Open(from)
	if err == nil {
		_, err = io.Copy(out, in)
		in.Close()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		if err = unix.Fstatat(parent, name, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil && identOf(&st) != withoutSum(e.id) {
			err = fmt.Errorf("%w: it changed meanwhile", errIndexBusy)
		}
	}
	if err == nil {
		err = unix.Renameat(parent, lock, parent, name)
	}
	if err != nil {
		unix.Unlinkat(parent, lock, 0)
		return fmt.Errorf("replace %q: %w", e.path, err)
	}
	return nil
}
