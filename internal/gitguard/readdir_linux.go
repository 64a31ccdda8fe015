package gitguard

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// direntBufs holds getdents buffers: one lists about a thousand entries.
var direntBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// readDir reads the directory f with getdents, for its markers, its
// subdirectories and whether it holds a symbolic link. The kernel gives each entry's type
// with its name, so a file costs a comparison with the markers' names: no
// stat, no allocation (an object store holds thousands of files). Only an
// entry whose type a filesystem does not say (DT_UNKNOWN) costs an fstatat.
func readDir(f *os.File) (flags uint8, dirs []string, links bool, err error) {
	fd, path := int(f.Fd()), f.Name()
	bp := direntBufs.Get().(*[]byte)
	defer direntBufs.Put(bp)
	buf := *bp
	for {
		n, err := unix.Getdents(fd, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return 0, nil, false, fmt.Errorf("getdents %q: %w", path, err)
		}
		if n <= 0 {
			return flags, dirs, links, nil
		}
		for b := buf[:n]; len(b) > 0; {
			// struct linux_dirent64: ino u64, off s64, reclen u16,
			// type u8, name, NUL-terminated.
			const nameOff = 19
			if len(b) < nameOff {
				return 0, nil, false, fmt.Errorf("getdents %q: a short record", path)
			}
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < nameOff || reclen > len(b) {
				return 0, nil, false, fmt.Errorf("getdents %q: a record of %d bytes", path, reclen)
			}
			typ, name := b[18], b[nameOff:reclen]
			b = b[reclen:]
			for i, c := range name {
				if c == 0 {
					name = name[:i]
					break
				}
			}
			if len(name) == 0 || string(name) == "." || string(name) == ".." {
				continue
			}
			flags |= markerBytes(name)
			if typ == unix.DT_UNKNOWN {
				var st unix.Stat_t
				if unix.Fstatat(fd, string(name), &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
					continue // gone since
				}
				switch st.Mode & unix.S_IFMT {
				case unix.S_IFDIR:
					typ = unix.DT_DIR
				case unix.S_IFLNK:
					typ = unix.DT_LNK
				case unix.S_IFIFO, unix.S_IFSOCK, unix.S_IFCHR, unix.S_IFBLK:
					typ = unix.DT_FIFO // special: what links.go removes too
				}
			}
			switch typ {
			case unix.DT_DIR:
				dirs = append(dirs, string(name))
			case unix.DT_LNK, unix.DT_FIFO, unix.DT_SOCK, unix.DT_CHR, unix.DT_BLK:
				links = true // a link or special file: links.go
			}
		}
	}
}

// markerBytes is markerOf for a name not yet made a string: the string
// is a view of the buffer, made for the comparison only.
func markerBytes(name []byte) uint8 {
	if len(name) == 0 {
		return 0
	}
	return markerOf(unsafe.String(&name[0], len(name)))
}
