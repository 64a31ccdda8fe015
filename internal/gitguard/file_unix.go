//go:build unix

package gitguard

import (
	"crypto/rand"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// Everything read here from a writable root was possibly written by a
// sandboxed command: no symlink is followed, nothing blocks (a FIFO is
// refused after a non-blocking open), only regular files are read, and
// every read has a cap.

// ident is what is at a path now: enough to tell that it changed. The zero
// value means absent.
type ident struct {
	Kind         uint32 // S_IFMT bits
	Dev, Ino     uint64
	Size         int64
	Mtime, Ctime int64  // nanoseconds
	Sum          uint64 // a digest of content or listing, where the role keeps one
}

func (id ident) exists() bool { return id.Kind != 0 }
func (id ident) isDir() bool  { return id.Kind == unix.S_IFDIR }
func (id ident) isReg() bool  { return id.Kind == unix.S_IFREG }
func (id ident) isLink() bool { return id.Kind == unix.S_IFLNK }

// errOdd marks a path that cannot be read safely: a symlink or special file
// where a regular file or directory belongs, or something too large.
var errOdd = errors.New("odd file")

// lstatIdent returns what is at path, without following a final symlink.
// An absent path is the zero ident with no error.
func lstatIdent(path string) (ident, error) {
	var st unix.Stat_t
	err := unix.Lstat(path, &st)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return ident{}, nil
	}
	if err != nil {
		return ident{}, fmt.Errorf("lstat %q: %w", path, err)
	}
	return identOf(&st), nil
}

// readRegular reads the regular file at path, at most max bytes, without
// following any symlink on the way and without blocking.
func readRegular(path string, max int64) ([]byte, ident, error) {
	fd, err := openNoSymlinks(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC)
	if err != nil {
		return nil, ident{}, err
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, ident{}, fmt.Errorf("fstat %q: %w", path, err)
	}
	id := identOf(&st)
	if !id.isReg() {
		return nil, id, fmt.Errorf("%w: %s is not a regular file", errOdd, path)
	}
	if st.Size > max {
		return nil, id, fmt.Errorf("%w: %s is larger than %d bytes", errOdd, path, max)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, id, fmt.Errorf("read %q: %w", path, err)
	}
	if int64(len(b)) > max {
		return nil, id, fmt.Errorf("%w: %s is larger than %d bytes", errOdd, path, max)
	}
	return b, id, nil
}

// dirEntry is one entry of a listed directory.
type dirEntry struct {
	name string
	id   ident
}

// listDir lists the directory at path, with the type of each entry (from
// the directory itself), sorted by name. More than max entries is odd.
func listDir(path string, max int) ([]dirEntry, ident, error) {
	fd, err := openNoSymlinks(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NONBLOCK|unix.O_CLOEXEC)
	if err != nil {
		return nil, ident{}, err
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, ident{}, fmt.Errorf("fstat %q: %w", path, err)
	}
	ents, err := f.ReadDir(max + 1)
	if err != nil && err != io.EOF {
		return nil, ident{}, fmt.Errorf("read directory %q: %w", path, err)
	}
	if len(ents) > max {
		return nil, ident{}, fmt.Errorf("%w: %s has more than %d entries", errOdd, path, max)
	}
	out := make([]dirEntry, 0, len(ents))
	for _, e := range ents {
		out = append(out, dirEntry{name: e.Name(), id: ident{Kind: uint32(modeKind(e.Type()))}})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, identOf(&st), nil
}

// statEach reads what each of ents is now (inode, size, times) through
// the directory at path, opened refusing symlinks, which must still be the
// directory id: a hook rewritten in place changes the listing's digest so.
// An entry gone since it was listed keeps its kind alone.
func statEach(path string, id ident, ents []dirEntry) error {
	fd, err := openNoSymlinks(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NONBLOCK|unix.O_CLOEXEC)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("fstat %q: %w", path, err)
	}
	if now := identOf(&st); now.Dev != id.Dev || now.Ino != id.Ino {
		return fmt.Errorf("%s was replaced while it was read", path)
	}
	for i := range ents {
		if unix.Fstatat(fd, ents[i].name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
			ents[i].id = identOf(&st)
		}
	}
	return nil
}

// modeKind maps a directory entry's type to S_IFMT bits.
func modeKind(m os.FileMode) uint32 {
	switch {
	case m.IsDir():
		return unix.S_IFDIR
	case m&os.ModeSymlink != 0:
		return unix.S_IFLNK
	case m&os.ModeNamedPipe != 0:
		return unix.S_IFIFO
	case m&os.ModeSocket != 0:
		return unix.S_IFSOCK
	case m&os.ModeCharDevice != 0:
		return unix.S_IFCHR
	case m&os.ModeDevice != 0:
		return unix.S_IFBLK
	}
	return unix.S_IFREG
}

// listingSum digests a listing: names and what each is.
func listingSum(ents []dirEntry) uint64 {
	h := fnv.New64a()
	for _, e := range ents {
		fmt.Fprintf(h, "%s\x00%d\x00", e.name, e.id.Kind)
		if e.id.Ino != 0 { // read by statEach
			fmt.Fprintf(h, "%d\x00%d\x00%d\x00%d\x00%d\x00", e.id.Dev, e.id.Ino, e.id.Size, e.id.Mtime, e.id.Ctime)
		}
	}
	return h.Sum64()
}

func contentSum(b []byte) uint64 {
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}

// readLink reads a symlink's target, refusing absurd lengths.
func readLink(path string) (string, error) {
	buf := make([]byte, 4096)
	n, err := unix.Readlink(path, buf)
	if err != nil {
		return "", fmt.Errorf("readlink %q: %w", path, err)
	}
	if n >= len(buf) {
		return "", fmt.Errorf("%w: %s points at an over-long path", errOdd, path)
	}
	return string(buf[:n]), nil
}

// quarantineSuffix is added to the name of what was moved aside.
const quarantineSuffix = ".quarantined-by-nanosandbox"

// Names tried for what is moved aside: the fixed ones first, so that the
// user finds it beside the original, then random ones, which a command
// cannot take in advance.
const (
	fixedAsideNames  = 100
	randomAsideNames = 16
	maxNameBytes     = 255 // NAME_MAX of Linux's filesystems and APFS
)

// renameAside renames path, which lies below root, beside itself with
// quarantineSuffix (and a number, or a random word, if that name is
// taken), without following a symlink and never replacing anything. It
// returns the new path. A command cannot make it fail: the directory
// holding path gets back its owner's write and search permission (the
// server runs as the uid that owns what commands make), a name too long
// for the suffix is shortened, and taken names are passed over.
func renameAside(root, path string) (string, error) {
	parent, name, err := openParent(root, path)
	if err != nil {
		return "", err
	}
	defer unix.Close(parent)
	base := name
	if hiddenAside(path) {
		// npm reads every entry of a node_modules directory as a
		// package but those beginning with a dot: a package moved aside
		// beside itself would still be one npx takes by its name.
		base = "." + name
	}
	if max := maxNameBytes - len(quarantineSuffix) - 17; len(base) > max { // "-" and 16 hex digits
		for max > 0 && !utf8.RuneStart(base[max]) {
			max--
		}
		base = base[:max]
	}
	allowed := false
	for i := 0; i < fixedAsideNames+randomAsideNames; i++ {
		to := base + quarantineSuffix
		switch {
		case i >= fixedAsideNames:
			var b [8]byte
			if _, err := rand.Read(b[:]); err != nil {
				return "", fmt.Errorf("rename %q: %w", path, err)
			}
			to = fmt.Sprintf("%s-%x", to, b)
		case i > 0:
			to = fmt.Sprintf("%s-%d", to, i)
		}
		err := renameNoReplace(parent, name, to)
		if errors.Is(err, unix.EACCES) && !allowed {
			// A command took write or search permission away.
			allowed = true
			if allowWrite(parent) {
				i--
				continue
			}
		}
		if errors.Is(err, unix.EEXIST) || errors.Is(err, unix.ENOTEMPTY) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("rename %q: %w", path, err)
		}
		return filepath.Join(filepath.Dir(path), to), nil
	}
	return "", fmt.Errorf("rename %q: every name tried beside it is taken", path)
}

// hiddenAside reports whether path is a package of a node_modules
// directory (or of a @scope directory in one) not already hidden by a dot.
func hiddenAside(path string) bool {
	name, dir := filepath.Base(path), filepath.Dir(path)
	if strings.HasPrefix(name, ".") {
		return false
	}
	if strings.HasPrefix(filepath.Base(dir), "@") {
		dir = filepath.Dir(dir)
	}
	return filepath.Base(dir) == "node_modules"
}

// openParent opens the directory holding path, beneath root and without
// following any symlink: a command can replace a directory with a symlink,
// and the server must never change anything outside a writable root on its
// behalf.
func openParent(root, path string) (fd int, name string, err error) {
	rel, err := filepath.Rel(root, path)
	if err != nil || rel == "." || rel == ".." || filepath.IsAbs(rel) || strings.HasPrefix(rel, "../") {
		return -1, "", fmt.Errorf("%q is not below %q", path, root)
	}
	dir := filepath.Dir(rel)
	fd, err = openBeneath(root, dir)
	if err != nil {
		return -1, "", err
	}
	return fd, filepath.Base(rel), nil
}
