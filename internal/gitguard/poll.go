package gitguard

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// pollFinder finds the candidates without watches: it walks the roots
// once, remembering each directory's state, and afterwards reads again
// only the directories whose times moved (an entry added, removed or
// renamed in a directory moves its times), walking whatever is new below
// them. A refresh costs one lstat per directory: about 10 ms for 10,000,
// against 110 ms for a walk. It serves one-shot calls, and servers that
// cannot watch.
type pollFinder struct {
	roots []string
	skip  func(string) bool
	dirs  map[string]*pollDir // nil: too many to remember; walk every time
	found []candidate
	links linked
}

type pollDir struct {
	dev, ino     uint64
	mtime, ctime int64
	read         int64 // when it was read, ns
	flags        uint8
	parentFlags  uint8
	rootLen      int
	kids         []string // subdirectories the scan enters
}

// maxPolled bounds the directories remembered (about 150 bytes each).
const maxPolled = 500_000

// settle is how soon after its last change a directory must have been read
// for its times to be trusted: a filesystem with coarse timestamps can give
// a change made soon after the read the same times.
var settle = time.Second

func (p *pollFinder) refresh() error {
	if p.dirs == nil {
		return p.walkAll()
	}
	for _, r := range p.roots {
		if err := p.check(-1, r, len(r), 0); err != nil {
			if errors.Is(err, errTooLarge) {
				return p.walkAll()
			}
			return err
		}
	}
	p.collect()
	return nil
}

// walkAll walks every root from scratch, remembering what it can.
func (p *pollFinder) walkAll() error {
	dirs := map[string]*pollDir{}
	var found []candidate
	now := time.Now().UnixNano()
	var rootLen int
	w := &walker{skip: p.skip, visit: func(path string, _ int, st dirState, parentFlags uint8) error {
		found = append(found, candidatesOf(path, st.flags, parentFlags)...)
		if st.links {
			p.links.add(path)
		}
		if len(dirs) >= maxPolled {
			dirs = nil // past the budget: no memory, a walk per refresh
		}
		if dirs != nil {
			dirs[path] = newPollDir(st, now, parentFlags, rootLen)
		}
		return nil
	}}
	for _, r := range p.roots {
		rootLen = len(r)
		if err := w.walk(r, 0); err != nil {
			// What was found is kept, for the end of a call to judge
			// (Call.End fails closed); nothing is remembered, so the
			// next refresh walks again.
			p.dirs = nil
			sortCandidates(found)
			p.found = found
			return err
		}
	}
	p.dirs = dirs
	sortCandidates(found)
	p.found = found
	return nil
}

// check brings path and what is below it up to date. Path is found in
// the directory open at parent (by its whole path when parent is -1), as
// the walk finds it (walker): a directory deep in a tree costs no more
// than one near the root.
func (p *pollFinder) check(parent int, path string, rootLen int, parentFlags uint8) error {
	d := p.dirs[path]
	id, err := lstatAt(parent, path)
	if err != nil {
		return err
	}
	if !id.isDir() || d == nil || d.dev != id.Dev || d.ino != id.Ino {
		p.forget(path)
		if !id.isDir() {
			return nil
		}
		return p.walkNew(parent, path, rootLen, parentFlags)
	}
	d.parentFlags = parentFlags
	// Read again if its times moved, or if it had changed shortly before it
	// was read: on a filesystem with coarse timestamps a change in the same
	// tick leaves the times as they were. And if it came into a git
	// directory, or left one, with no change of its own: its links
	// matter now.
	if d.mtime != id.Mtime || d.ctime != id.Ctime || d.read-d.ctime < int64(settle) ||
		withGitdir(path, d.flags, parentFlags) != d.flags {
		f, st, err := listAt(parent, path, rootLen, parentFlags, p.skip, nil)
		if f == nil {
			if err == nil {
				p.forget(path)
			}
			return err
		}
		f.Close()
		if st.links {
			p.links.add(path)
		}
		if st.id.Dev != d.dev || st.id.Ino != d.ino {
			// Replaced between the two looks: new.
			p.forget(path)
			return p.walkNew(parent, path, rootLen, parentFlags)
		}
		old := map[string]bool{}
		for _, k := range d.kids {
			old[k] = true
		}
		now := map[string]bool{}
		for _, k := range st.kids {
			now[k] = true
		}
		for k := range old {
			if !now[k] {
				p.forget(path + "/" + k)
			}
		}
		*d = *newPollDir(st, time.Now().UnixNano(), parentFlags, rootLen)
	}
	if len(d.kids) == 0 {
		return nil
	}
	// Its subdirectories are looked at in it, open without following a
	// symbolic link; one that is not what was looked at is new.
	fd, err := openDirAt(parent, path)
	if errors.Is(err, unix.EACCES) && allowReadAt(parent, path) {
		fd, err = openDirAt(parent, path)
	}
	if err != nil {
		p.forget(path)
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, errOdd) || errors.Is(err, unix.EACCES) {
			return nil // gone, replaced by a symlink, or not ours (listAt)
		}
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("fstat %q: %w", path, err)
	}
	if now := identOf(&st); now.Dev != d.dev || now.Ino != d.ino {
		p.forget(path)
		return p.walkNew(parent, path, rootLen, parentFlags)
	}
	for _, k := range d.kids {
		if err := p.check(fd, path+"/"+k, rootLen, d.flags); err != nil {
			return err
		}
	}
	return nil
}

// lstatAt is lstatIdent for the last name of path in the directory open
// at parent (the whole path when parent is -1).
func lstatAt(parent int, path string) (ident, error) {
	if parent < 0 {
		return lstatIdent(path)
	}
	var st unix.Stat_t
	err := unix.Fstatat(parent, filepath.Base(path), &st, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return ident{}, nil
	}
	if err != nil {
		return ident{}, fmt.Errorf("lstat %q: %w", path, err)
	}
	return identOf(&st), nil
}

// walkNew walks a directory not seen before, remembering it.
func (p *pollFinder) walkNew(parent int, path string, rootLen int, parentFlags uint8) error {
	now := time.Now().UnixNano()
	w := &walker{skip: p.skip, visit: func(path string, _ int, st dirState, parentFlags uint8) error {
		if len(p.dirs) >= maxPolled {
			return fmt.Errorf("%w: more than %d to remember", errTooLarge, maxPolled)
		}
		if st.links {
			p.links.add(path)
		}
		p.dirs[path] = newPollDir(st, now, parentFlags, rootLen)
		return nil
	}}
	return w.walkDir(parent, path, rootLen, parentFlags)
}

func newPollDir(st dirState, read int64, parentFlags uint8, rootLen int) *pollDir {
	return &pollDir{dev: st.id.Dev, ino: st.id.Ino, mtime: st.id.Mtime, ctime: st.id.Ctime, read: read,
		flags: st.flags, parentFlags: parentFlags, rootLen: rootLen, kids: st.kids}
}

// forget drops path and everything remembered below it.
func (p *pollFinder) forget(path string) {
	d := p.dirs[path]
	if d == nil {
		return
	}
	for _, k := range d.kids {
		p.forget(path + "/" + k)
	}
	delete(p.dirs, path)
}

// collect lists the candidates the remembered directories hold.
func (p *pollFinder) collect() {
	p.found = p.found[:0]
	for path, d := range p.dirs {
		p.found = append(p.found, candidatesOf(path, d.flags, d.parentFlags)...)
	}
	sortCandidates(p.found)
}

func (p *pollFinder) candidates() []candidate { return p.found }
func (p *pollFinder) takeLinked() []string    { return p.links.take() }
func (p *pollFinder) close()                  {}
