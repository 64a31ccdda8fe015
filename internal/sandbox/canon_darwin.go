package sandbox

import (
	"os"
	"path/filepath"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// seatbeltCanon names path as the kernel does when Seatbelt checks an
// access to it (a canonFunc): the path of the open file (F_GETPATH), with
// every symlink resolved but a final one unless follow, /tmp as
// /private/tmp, and each name spelled as the volume holds it, which on a
// case-insensitive volume (the default) need not be as given. What cannot
// be opened (absent, or not ours to read) keeps its own name below its
// directory's canonical path.
func seatbeltCanon(path string, follow bool) string {
	return canonAt(filepath.Clean(path), follow, 40)
}

func canonAt(path string, follow bool, budget int) string {
	if path == "/" || !filepath.IsAbs(path) || budget == 0 {
		return path
	}
	flags := unix.O_RDONLY | unix.O_NONBLOCK | unix.O_CLOEXEC
	if !follow {
		flags |= unix.O_SYMLINK // the link itself, should it be one
	}
	if fd, err := unix.Open(path, flags, 0); err == nil {
		p, err := fdPath(fd)
		unix.Close(fd)
		if err == nil && filepath.IsAbs(p) {
			return p
		}
	}
	dir := canonAt(filepath.Dir(path), true, budget-1)
	full := filepath.Join(dir, filepath.Base(path))
	if follow {
		if target, err := os.Readlink(full); err == nil {
			if !filepath.IsAbs(target) {
				target = filepath.Join(dir, target)
			}
			return canonAt(filepath.Clean(target), true, budget-1)
		}
	}
	return full
}

// getPathBuf receives F_GETPATH's answer. A global, so it never moves
// while the kernel writes it.
var getPathBuf struct {
	sync.Mutex
	b [unix.PathMax]byte
}

// fdPath returns the path of the file open as fd, as the kernel names it.
func fdPath(fd int) (string, error) {
	getPathBuf.Lock()
	defer getPathBuf.Unlock()
	clear(getPathBuf.b[:])
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETPATH, int(uintptr(unsafe.Pointer(&getPathBuf.b[0])))); err != nil {
		return "", err
	}
	return unix.ByteSliceToString(getPathBuf.b[:]), nil
}
