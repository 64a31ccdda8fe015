package sandbox

import (
	"bytes"
	"os"
	"sync"
)

// mountWatch says when the host's mount table changed: a home bound
// elsewhere after the start (mount --bind ~ /mnt/x), a filesystem mounted
// twice where it was once. Planning reads the table for the aliases of
// what it hides, and where nothing is mounted twice it skips them; a plan
// made before such a mount would leave the new alias shown. The table is
// read at each call and compared with the last one read: tens of
// microseconds for a few dozen mounts. (poll on an open mountinfo, which
// the kernel documents for this, was tried first: it missed a bind mount
// another process made, on this machine's kernel.)
type mountWatch struct {
	mu   sync.Mutex
	last []byte
}

const mountTable = "/proc/self/mountinfo"

// watchMounts reads the mount table as it is now, or returns nil where it
// cannot be read (every call then plans again, as if it changed).
func watchMounts() *mountWatch {
	b, err := os.ReadFile(mountTable)
	if err != nil {
		return nil
	}
	return &mountWatch{last: b}
}

// changed reports whether the mount table changed since the last time it
// was asked (or watchMounts), and true where it cannot tell.
func (w *mountWatch) changed() bool {
	if w == nil {
		return true
	}
	b, err := os.ReadFile(mountTable)
	if err != nil {
		return true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if bytes.Equal(b, w.last) {
		return false
	}
	w.last = b
	return true
}
