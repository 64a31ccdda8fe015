package gitguard

import (
	"errors"
	"strconv"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A server's calls would stat every loose object of every trusted
// repository at every end (changedIn): 3,000 of them cost an idle call
// about 5 ms here, more than the rest of its git protection. So a guard
// that serves many calls (Watch) watches each loose object's inode with
// inotify, and at the end of a call stats only those an event touched
// since the calls running began, or that it could not watch.
//
// Why skipping the others is sound:
//   - The watch is on the object's inode, opened by O_PATH through its
//     fan-out directory, so it sees the inode whatever name is used: a
//     hard link made elsewhere to write it, a rename, /proc/self/fd.
//   - The mask holds IN_OPEN: no write (write, mmap, fallocate, a clone
//     onto it, io_uring) goes without an open, and the event is queued
//     during the open itself, not when the file is closed (a descriptor
//     kept in a Unix socket's garbage is closed long after its process).
//     IN_ATTRIB sees chmod and every change of its link count; IN_MODIFY
//     a truncate by path, which opens nothing.
//   - A name is bound to a watched inode only when the name was seen to
//     lead to it after the watch was added: from then on, pointing the
//     name elsewhere (a rename over it, an unlink) changes the old inode's
//     link count, an event on it.
//   - A fan-out directory's watch sees names created or moved in it; the
//     object directory's, fan-out directories made or moved; and the
//     object directory is opened again by its path at every end, its
//     identity compared.
//   - Events are queued when the change is made, so once a call's
//     processes are gone, one read of the queue has all of them. A watch
//     added, or an event read, after the calls running began counts as a
//     change: a running call may have acted before it. A queue overflow
//     counts as a change of everything.
//   - Only on filesystems whose every change goes through this kernel's
//     VFS (ext4, xfs, btrfs, tmpfs, f2fs, zfs, bcachefs): a network or
//     FUSE filesystem, or overlayfs's layers, can change underneath
//     without an event, so there every object is stat'ed, as before.
//
// What is stat'ed is then judged as before: a ctime at or after the calls
// began means it is hashed.

const (
	// No IN_DONT_FOLLOW: each is added through /proc/self/fd, a link
	// to what was opened without following one.
	objFileMask = unix.IN_OPEN | unix.IN_ATTRIB | unix.IN_MODIFY | unix.IN_MOVE_SELF | unix.IN_DELETE_SELF
	objDirMask  = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_ATTRIB |
		unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR
)

// objWatcher is the guard's inotify instance for object stores, used with
// g.mu held.
type objWatcher struct {
	fd         int // -1: none (inotify unavailable): every object is stat'ed
	wds        map[int32]*watchState
	stores     map[string]*storeWatch
	overflowAt time.Time // the last read that found the queue had overflowed
	files      int       // object watches held
	fsOK       map[uint64]bool
	buf        []byte // for reading events
	// gen counts what can make a watch's state say less: a watch added,
	// an event read on one, a watch gone, the queue overflowing. A store
	// found clean (storeWatch.cleanGen) stays so while gen has not moved.
	gen uint64
}

// watchState is one watched inode's.
type watchState struct {
	wd       int32
	added    time.Time // when the watch was added
	event    time.Time // the last read that found an event on it
	gone     bool      // the watch was removed (the inode is gone)
	dev, ino uint64
	refs     int
}

type storeWatch struct {
	dir  *watchState
	fans map[string]*fanWatch
	// cleanGen and cleanSince: at the watcher's generation cleanGen, every
	// watch of the store (its directory, its fan-out directories, each
	// object's) was found valid for calls that began at cleanSince, and
	// every object watched. valid compares times only, so while nothing
	// moved gen every one of them is still valid for calls that began at
	// or after cleanSince: the end of such a call need not visit them.
	// cleanGen 0: not found clean.
	cleanGen   uint64
	cleanSince time.Time
}

type fanWatch struct {
	dir   *watchState
	names map[string]*watchState // nil: not watched, stat'ed at every end
}

// objWatchBudget is the most object watches a guard holds: an eighth of
// the user's inotify watches (editors share them), and never more than
// 100,000. Past it, the objects left are stat'ed at every end.
func objWatchBudget() int {
	n := watchLimit() / 4 // watchLimit is half the user's
	if n > 100_000 {
		n = 100_000
	}
	return n
}

func newObjWatcher() *objWatcher {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		fd = -1
	}
	return &objWatcher{fd: fd, wds: map[int32]*watchState{}, stores: map[string]*storeWatch{}, fsOK: map[uint64]bool{}}
}

func (w *objWatcher) close() {
	if w != nil && w.fd >= 0 {
		unix.Close(w.fd)
		w.fd = -1
	}
}

// settle reads the events queued before a call begins: changes made
// between calls (the user's own git reading its objects) are not a call's.
func (w *objWatcher) settle() {
	if w != nil && w.fd >= 0 {
		w.drain()
	}
}

// drain reads every event queued.
func (w *objWatcher) drain() {
	if w.buf == nil {
		w.buf = make([]byte, 64<<10)
	}
	buf := w.buf
	for {
		n, err := unix.Read(w.fd, buf)
		if err != nil || n <= 0 {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return
		}
		now := time.Now()
		b := buf[:n]
		for len(b) >= unix.SizeofInotifyEvent {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&b[0]))
			end := unix.SizeofInotifyEvent + int(ev.Len)
			if end > len(b) {
				break
			}
			b = b[end:]
			if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
				w.overflowAt = now
				w.gen++
				continue
			}
			s := w.wds[ev.Wd]
			if s == nil {
				continue
			}
			s.event = now
			w.gen++
			if ev.Mask&unix.IN_IGNORED != 0 {
				s.gone = true
				delete(w.wds, ev.Wd)
			}
		}
	}
}

// valid reports whether s saw no change since the calls running began.
func (w *objWatcher) valid(s *watchState, since time.Time) bool {
	return s != nil && !s.gone && s.added.Before(since) && s.event.Before(since) && w.overflowAt.Before(since)
}

// watch adds a watch on the inode open at fd (O_PATH), or finds the one it
// has, and returns its state; nil if it cannot.
func (w *objWatcher) watch(fd int, mask uint32, st *unix.Stat_t) *watchState {
	wd, err := unix.InotifyAddWatch(w.fd, "/proc/self/fd/"+strconv.Itoa(fd), mask)
	if err != nil {
		return nil
	}
	s := w.wds[int32(wd)]
	if s != nil && s.dev == st.Dev && s.ino == st.Ino {
		return s
	}
	if s != nil {
		s.gone = true
	}
	// A new watch, or a number the kernel gave again after its inode's
	// watch was removed.
	s = &watchState{wd: int32(wd), added: time.Now(), dev: st.Dev, ino: st.Ino}
	w.wds[int32(wd)] = s
	w.gen++
	return s
}

// ref adds a reference to s; file says it is an object's.
func (w *objWatcher) ref(s *watchState, file bool) {
	if s == nil {
		return
	}
	if s.refs == 0 && file {
		w.files++
	}
	s.refs++
}

// unref drops a reference to s, removing the watch when none is left.
func (w *objWatcher) unref(s *watchState, file bool) {
	if s == nil {
		return
	}
	s.refs--
	if s.refs > 0 {
		return
	}
	if file {
		w.files--
	}
	w.forget(s)
}

func (w *objWatcher) dropFan(f *fanWatch) {
	for _, s := range f.names {
		w.unref(s, true)
	}
	w.unref(f.dir, false)
}

func (w *objWatcher) dropStore(sw *storeWatch) {
	for _, f := range sw.fans {
		w.dropFan(f)
	}
	w.unref(sw.dir, false)
}

// localFS reports whether every change to a file on the filesystem of fd
// is made through this kernel, so that inotify sees it.
func (w *objWatcher) localFS(fd int, dev uint64) bool {
	if ok, seen := w.fsOK[dev]; seen {
		return ok
	}
	var sfs unix.Statfs_t
	ok := false
	if unix.Fstatfs(fd, &sfs) == nil {
		switch uint32(sfs.Type) {
		case unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC, unix.TMPFS_MAGIC,
			unix.F2FS_SUPER_MAGIC, 0x2fc12fc1 /* zfs */, 0xca451a4e /* bcachefs */ :
			ok = true
		}
	}
	w.fsOK[dev] = ok
	return ok
}

// looseChanged lists the loose objects of the object directory dir
// ("xx/<hex>") whose ctime is at or after since, stat'ing only those an
// event touched since the calls began at sinceMono; ok is false when it
// cannot tell (then every object must be stat'ed).
func (w *objWatcher) looseChanged(dir string, since int64, sinceMono time.Time) (out []string, ok bool) {
	if w == nil || w.fd < 0 {
		return nil, false
	}
	ofd, err := openNoSymlinks(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NONBLOCK|unix.O_CLOEXEC)
	if err != nil {
		if sw := w.stores[dir]; sw != nil {
			w.dropStore(sw)
			delete(w.stores, dir)
		}
		return nil, errors.Is(err, unix.ENOENT) // gone: nothing git finds there either
	}
	defer unix.Close(ofd)
	var ost unix.Stat_t
	if unix.Fstat(ofd, &ost) != nil || !w.localFS(ofd, ost.Dev) {
		return nil, false
	}
	w.drain()
	sw := w.stores[dir]
	if sw != nil && (sw.dir == nil || sw.dir.gone || sw.dir.dev != ost.Dev || sw.dir.ino != ost.Ino) {
		w.dropStore(sw)
		sw = nil
	}
	if sw == nil {
		sw = &storeWatch{fans: map[string]*fanWatch{}}
		sw.dir = w.watch(ofd, objDirMask, &ost)
		if sw.dir == nil {
			return nil, false
		}
		w.ref(sw.dir, false)
		w.stores[dir] = sw
	}
	if sw.cleanGen == w.gen && !sinceMono.Before(sw.cleanSince) && !sinceMono.IsZero() {
		return nil, true // nothing moved since every watch here was found valid
	}
	gen, clean := w.gen, true
	fans := make([]string, 0, len(sw.fans))
	if w.valid(sw.dir, sinceMono) {
		for f := range sw.fans {
			fans = append(fans, f)
		}
	} else {
		names, err := namesAt(ofd)
		if err != nil {
			return nil, false
		}
		seen := map[string]bool{}
		for _, n := range names {
			if len(n) == 2 && isHex(n) {
				fans = append(fans, n)
				seen[n] = true
			}
		}
		for f, fw := range sw.fans {
			if !seen[f] {
				w.dropFan(fw)
				delete(sw.fans, f)
			}
		}
	}
	for _, f := range fans {
		got, all, ok := w.fanChanged(sw, ofd, f, since, sinceMono)
		if !ok {
			return nil, false
		}
		clean = clean && all
		out = append(out, got...)
	}
	if clean && len(out) == 0 && w.gen == gen && w.valid(sw.dir, sinceMono) {
		sw.cleanGen, sw.cleanSince = gen, sinceMono
	}
	return out, true
}

// fanChanged is looseChanged for one fan-out directory; valid says its
// watch and every object's in it were valid, so nothing was stat'ed.
func (w *objWatcher) fanChanged(sw *storeWatch, ofd int, fan string, since int64, sinceMono time.Time) (out []string, valid, ok bool) {
	fw := sw.fans[fan]
	var fd int
	var err error
	open := func() bool {
		fd, err = unix.Openat(ofd, fan, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		return err == nil
	}
	if fw != nil && w.valid(fw.dir, sinceMono) {
		// No name made, removed or moved in it: only the names whose
		// inode an event touched, and those not watched, are stat'ed.
		var todo []string
		for n, s := range fw.names {
			if !w.valid(s, sinceMono) {
				todo = append(todo, n)
			}
		}
		if len(todo) == 0 {
			return nil, true, true
		}
		if !open() {
			return nil, false, false
		}
		defer unix.Close(fd)
		return w.statNames(fw, fd, fan, todo, since), false, true
	}
	if !open() {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
			if fw != nil {
				w.dropFan(fw)
				delete(sw.fans, fan)
			}
			return nil, false, true // git looks up no object below a symlink or a file either
		}
		return nil, false, false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return nil, false, false
	}
	ds := w.watch(fd, objDirMask, &st)
	if fw == nil || fw.dir != ds {
		if fw != nil {
			w.dropFan(fw)
		}
		fw = &fanWatch{dir: ds, names: map[string]*watchState{}}
		w.ref(ds, false)
		sw.fans[fan] = fw
	}
	// Listed after its watch was added: a name made from then on is an
	// event.
	names, err := namesAt(fd)
	if err != nil {
		return nil, false, false
	}
	seen := map[string]bool{}
	var todo []string
	for _, n := range names {
		if (len(n) != 38 && len(n) != 62) || !isHex(n) {
			continue // not a name git looks up
		}
		seen[n] = true
		if s, had := fw.names[n]; !had || !w.valid(s, sinceMono) {
			todo = append(todo, n)
		}
	}
	for n, s := range fw.names {
		if !seen[n] {
			w.unref(s, true)
			delete(fw.names, n)
		}
	}
	return w.statNames(fw, fd, fan, todo, since), false, true
}

// statNames stats each name in the fan-out directory open at fd, lists
// those changed since, and watches each that it can.
func (w *objWatcher) statNames(fw *fanWatch, fd int, fan string, names []string, since int64) []string {
	var out []string
	budget := objWatchBudget()
	for _, n := range names {
		old := fw.names[n]
		var st unix.Stat_t
		var s *watchState
		if old != nil || w.files < budget {
			s = w.bind(fd, n, &st)
		}
		if s == nil {
			// Not watched: stat'ed now and at every end.
			if unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
				w.unref(old, true)
				delete(fw.names, n)
				continue // gone since it was listed
			}
		}
		if identOf(&st).Ctime >= since {
			out = append(out, fan+"/"+n)
		}
		if s != old {
			w.ref(s, true)
			w.unref(old, true)
		}
		fw.names[n] = s
	}
	return out
}

// bind watches the inode the name n in the directory open at fd leads to,
// and returns its state when n was seen to lead there after the watch was
// added; st is then its stat.
func (w *objWatcher) bind(fd int, n string, st *unix.Stat_t) *watchState {
	pfd, err := unix.Openat(fd, n, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer unix.Close(pfd)
	if unix.Fstat(pfd, st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil
	}
	s := w.watch(pfd, objFileMask, st)
	if s == nil {
		return nil
	}
	var now unix.Stat_t
	if unix.Fstatat(fd, n, &now, unix.AT_SYMLINK_NOFOLLOW) != nil || now.Dev != st.Dev || now.Ino != st.Ino {
		if s.refs == 0 {
			w.forget(s)
		}
		return nil
	}
	*st = now // its ctime as of now, after the watch
	return s
}

// forget removes a watch nothing refers to.
func (w *objWatcher) forget(s *watchState) {
	if !s.gone && w.wds[s.wd] == s {
		unix.InotifyRmWatch(w.fd, uint32(s.wd))
		delete(w.wds, s.wd)
	}
	s.gone = true
	w.gen++
}
