package gitguard

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// tree keeps the candidates below the roots up to date with inotify, so a
// call costs what changed, not what exists: the directories are walked
// once, each watched for entries created, removed or renamed in it, and a
// refresh handles only the events since the last one. A queue overflow (a
// build that creates tens of thousands of files at once) costs one walk.
type tree struct {
	roots []string
	skip  func(string) bool

	// The inotify descriptor, non-blocking. fd is its number: file.Fd()
	// would make it blocking. gen counts descriptors, so the reader of an
	// old one stops.
	file  *os.File
	fd    int
	gen   int
	nodes map[string]*node
	wds   map[int32][]*node
	cands map[candidate]bool
	// watched is the watch opened added for the directory visit is
	// given next (the walk opens, watches, reads, then visits).
	watched int32

	// links are the directories in git directories that may hold a
	// symbolic link made since takeLinked last asked.
	links linked

	mu       sync.Mutex // guards pending, touched and overflow, filled by pump
	pending  []event
	overflow bool
	closed   bool
	// touched are the watches in whose directory something that is no
	// directory was created or moved in: in a git directory, perhaps a
	// symbolic link. One entry per watch, however many files come.
	touched map[int32]bool
}

type node struct {
	path     string
	parent   *node
	children map[string]*node
	flags    uint8
	cands    []candidate // what it adds to tree.cands
	wd       int32
	dev, ino uint64
}

type event struct {
	wd   int32
	mask uint32
	name string
}

// watchLimit is the most directories the tree watches; past it the guard
// walks instead. Each watch costs the kernel about 1 KiB, and the user's
// other tools (editors, file watchers) share the per-user limit: at most
// half of it, and never more than 500,000. It is read once, when a tree is
// first made, not at start: the sandbox's own processes are this binary
// again and watch nothing.
var watchLimit = sync.OnceValue(func() int {
	n := 500_000
	if b, err := os.ReadFile("/proc/sys/fs/inotify/max_user_watches"); err == nil {
		if k, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && k/2 < n {
			n = k / 2
		}
	}
	return n
})

// maxWatched, when above 0, stands in for watchLimit (tests set it).
var maxWatched int

// maxWatches is the most directories the tree watches.
func maxWatches() int {
	if maxWatched > 0 {
		return maxWatched
	}
	return watchLimit()
}

// maxPending bounds events queued between two refreshes.
const maxPending = 1 << 20

const watchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
	unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR | unix.IN_EXCL_UNLINK

func newTree(roots []string, skip func(string) bool) (*tree, error) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("%w: inotify_init1: %v", errNoWatch, err)
	}
	t := &tree{roots: roots, skip: skip, file: os.NewFile(uintptr(fd), "inotify"), fd: fd}
	if err := t.build(); err != nil {
		t.file.Close()
		return nil, err
	}
	go t.pump(t.file, t.gen)
	return t, nil
}

// build walks every root and watches each directory.
func (t *tree) build() error {
	t.nodes = map[string]*node{}
	t.wds = map[int32][]*node{}
	t.cands = map[candidate]bool{}
	w := &walker{skip: t.skip, opened: t.opened, visit: t.visit}
	for _, r := range t.roots {
		if err := w.walk(r, 0); err != nil {
			return err
		}
	}
	return nil
}

// opened watches the directory path, open at fd, before the walk reads
// it: what is made in it from then on is an event, if it is not listed.
func (t *tree) opened(path string, fd int) error {
	if n := maxWatches(); len(t.nodes) >= n {
		return fmt.Errorf("%w: more than %d directories", errNoWatch, n)
	}
	wd, err := unix.InotifyAddWatch(t.fd, "/proc/self/fd/"+strconv.Itoa(fd), watchMask)
	if err != nil {
		return fmt.Errorf("%w: inotify_add_watch %q: %v", errNoWatch, path, err)
	}
	t.watched = int32(wd)
	return nil
}

func (t *tree) visit(path string, fd int, st dirState, parentFlags uint8) error {
	wd := t.watched
	if old := t.nodes[path]; old != nil {
		t.remove(old)
	}
	if st.links {
		t.links.add(path)
	}
	n := &node{path: path, flags: st.flags, wd: wd, dev: st.id.Dev, ino: st.id.Ino}
	if p := t.nodes[filepath.Dir(path)]; p != nil && path != filepath.Dir(path) {
		n.parent = p
		if p.children == nil {
			p.children = map[string]*node{}
		}
		p.children[filepath.Base(path)] = n
	}
	t.nodes[path] = n
	t.wds[n.wd] = append(t.wds[n.wd], n)
	t.setCands(n)
	return nil
}

// setCands recomputes what n adds to the candidates, from its markers and
// its parent's (a .git directory is its parent's entry, not a bare one).
func (t *tree) setCands(n *node) {
	for _, c := range n.cands {
		delete(t.cands, c)
	}
	var pf uint8
	if n.parent != nil {
		pf = n.parent.flags
	}
	n.cands = candidatesOf(n.path, n.flags, pf)
	for _, c := range n.cands {
		t.cands[c] = true
	}
}

// pump reads events as they come, so the kernel's queue (16384 events by
// default) does not overflow while a command runs.
func (t *tree) pump(f *os.File, gen int) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	buf := make([]byte, 64<<10)
	rc.Read(func(fd uintptr) bool {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.gen != gen {
			return true
		}
		return t.readLocked(int(fd), buf)
	})
}

// readLocked reads what is queued; it reports true when the descriptor is
// done for (closed or failing), false when it would block.
func (t *tree) readLocked(fd int, buf []byte) bool {
	for {
		if t.closed {
			return true
		}
		n, err := unix.Read(fd, buf)
		switch {
		case n > 0:
			t.take(buf[:n])
		case errors.Is(err, unix.EINTR):
		case errors.Is(err, unix.EAGAIN):
			return false
		default:
			return true
		}
	}
}

// take keeps the events that can change the candidates: directories
// created, removed or renamed, marker names, watches gone, overflow.
func (t *tree) take(b []byte) {
	for len(b) >= unix.SizeofInotifyEvent {
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&b[0]))
		end := unix.SizeofInotifyEvent + int(ev.Len)
		if end > len(b) {
			return
		}
		name := string(bytes.TrimRight(b[unix.SizeofInotifyEvent:end], "\x00"))
		b = b[end:]
		if ev.Mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0 && ev.Mask&unix.IN_ISDIR == 0 {
			if t.touched == nil {
				t.touched = map[int32]bool{}
			}
			t.touched[ev.Wd] = true
		}
		keep := ev.Mask&(unix.IN_Q_OVERFLOW|unix.IN_IGNORED|unix.IN_DELETE_SELF|unix.IN_MOVE_SELF|unix.IN_ISDIR) != 0 || markerOf(name) != 0
		if !keep {
			continue
		}
		if len(t.pending) >= maxPending {
			t.overflow = true
			continue
		}
		t.pending = append(t.pending, event{wd: ev.Wd, mask: ev.Mask, name: name})
	}
}

// refresh brings the candidates up to date with every change made before
// it was called.
func (t *tree) refresh() error {
	t.mu.Lock()
	t.readLocked(t.fd, make([]byte, 64<<10))
	evs, overflow, touched := t.pending, t.overflow, t.touched
	t.pending, t.overflow, t.touched = nil, false, nil
	t.mu.Unlock()
	for wd := range touched {
		for _, n := range t.wds[wd] {
			if n.flags&inGitdir != 0 {
				t.links.add(n.path)
			}
		}
	}

	full := overflow
	type rescan struct {
		parent *node
		name   string
	}
	var rescans []rescan
	dirty := map[*node]bool{}
	for _, ev := range evs {
		if ev.mask&unix.IN_Q_OVERFLOW != 0 {
			full = true
			break
		}
		ns := t.wds[ev.wd]
		if ev.mask&unix.IN_IGNORED != 0 {
			for _, n := range ns {
				if n.parent == nil {
					full = true // a root went away
				}
			}
			delete(t.wds, ev.wd)
			continue
		}
		for _, n := range ns {
			if ev.mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0 && n.parent == nil {
				full = true
			}
			if ev.name == "" {
				continue
			}
			if ev.mask&unix.IN_ISDIR != 0 {
				if c := n.children[ev.name]; c != nil {
					t.remove(c)
				}
				if ev.mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0 {
					rescans = append(rescans, rescan{n, ev.name})
				}
			}
			if markerOf(ev.name) != 0 {
				dirty[n] = true
			}
		}
	}
	if full {
		return t.rebuild()
	}
	w := &walker{skip: t.skip, opened: t.opened, visit: t.visit}
	// Each new directory is opened in its parent, opened once for all the
	// directories made in it in a row (a build makes thousands in one): by
	// their whole paths, a deep tree cost the kernel every component again
	// for each.
	var last *node
	pfd := -1
	defer func() {
		if pfd >= 0 {
			unix.Close(pfd)
		}
	}()
	for _, r := range rescans {
		if t.nodes[r.parent.path] != r.parent {
			continue
		}
		child := r.parent.path + "/" + r.name
		if t.nodes[child] != nil || t.skip(child) {
			continue
		}
		if r.parent != last {
			if pfd >= 0 {
				unix.Close(pfd)
			}
			last = r.parent
			var err error
			pfd, err = openNoSymlinks(r.parent.path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC)
			if err != nil {
				pfd = -1 // gone, or a symlink now: walked by its path, as listAt judges
			}
		}
		if err := w.walkDir(pfd, child, len(child), r.parent.flags); err != nil {
			return err
		}
	}
	for n := range dirty {
		if t.nodes[n.path] == n {
			if err := t.reflag(n); err != nil {
				return err
			}
		}
	}
	// A root that did not exist (or went away and came back).
	for _, r := range t.roots {
		if t.nodes[r] == nil {
			if err := w.walk(r, 0); err != nil {
				return err
			}
		}
	}
	return nil
}

// reflag reads a directory's markers again, in the directory opened once
// refusing a symbolic link on the way (not its whole path once for each
// marker: the kernel would resolve every component each time, and follow
// a symbolic link swapped in on the way). A directory gone since has none.
func (t *tree) reflag(n *node) error {
	var flags uint8
	if fd, err := openNoSymlinks(n.path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC); err == nil {
		for name, bit := range markers {
			var st unix.Stat_t
			if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
				flags |= bit
			}
		}
		unix.Close(fd)
	}
	var pf uint8
	if n.parent != nil {
		pf = n.parent.flags
	}
	t.regit(n, withGitdir(n.path, flags, pf))
	t.setCands(n)
	if c := n.children[".git"]; c != nil {
		t.setCands(c)
	}
	return nil
}

// regit gives n its flags, and what is below it the inGitdir they now
// inherit: a directory that came into a git directory (HEAD made beside
// objects/ and refs/) is reported, for the links it already held.
func (t *tree) regit(n *node, flags uint8) {
	was := n.flags & inGitdir
	n.flags = flags
	if flags&inGitdir == was {
		return
	}
	if flags&inGitdir != 0 {
		t.links.add(n.path)
	}
	for _, c := range n.children {
		t.regit(c, withGitdir(c.path, c.flags, flags))
	}
}

// remove forgets n and everything below it.
func (t *tree) remove(n *node) {
	for _, c := range n.children {
		t.remove(c)
	}
	if t.nodes[n.path] == n {
		delete(t.nodes, n.path)
	}
	if n.parent != nil && n.parent.children[filepath.Base(n.path)] == n {
		delete(n.parent.children, filepath.Base(n.path))
	}
	for _, c := range n.cands {
		delete(t.cands, c)
	}
	ns := t.wds[n.wd]
	for i, o := range ns {
		if o == n {
			ns = append(ns[:i], ns[i+1:]...)
			break
		}
	}
	if len(ns) == 0 {
		delete(t.wds, n.wd)
		unix.InotifyRmWatch(t.fd, uint32(n.wd))
	} else {
		t.wds[n.wd] = ns
	}
}

// rebuild starts over with a fresh descriptor.
func (t *tree) rebuild() error {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return fmt.Errorf("%w: inotify_init1: %v", errNoWatch, err)
	}
	t.close()
	t.mu.Lock()
	t.gen++
	t.file, t.fd, t.closed, t.pending, t.overflow, t.touched = os.NewFile(uintptr(fd), "inotify"), fd, false, nil, false, nil
	t.mu.Unlock()
	if err := t.build(); err != nil {
		return err
	}
	go t.pump(t.file, t.gen)
	return nil
}

func (t *tree) takeLinked() []string { return t.links.take() }

func (t *tree) candidates() []candidate {
	out := make([]candidate, 0, len(t.cands))
	for c := range t.cands {
		out = append(out, c)
	}
	sortCandidates(out)
	return out
}

func (t *tree) close() {
	t.mu.Lock()
	t.closed = true
	t.gen++
	t.mu.Unlock()
	t.file.Close()
}
