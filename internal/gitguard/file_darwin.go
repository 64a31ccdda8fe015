package gitguard

import (
	"errors"
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"
)

func identOf(st *unix.Stat_t) ident {
	return ident{
		Kind: uint32(st.Mode) & unix.S_IFMT, Dev: uint64(st.Dev), Ino: st.Ino, Size: st.Size,
		Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano(),
	}
}

// openNoSymlinks opens path refusing a symlink anywhere in it
// (O_NOFOLLOW_ANY, macOS 11+).
func openNoSymlinks(path string, flags int) (int, error) {
	fd, err := unix.Open(path, flags|unix.O_NOFOLLOW_ANY, 0)
	if errors.Is(err, unix.ELOOP) {
		return -1, fmt.Errorf("%w: a symbolic link is in %s", errOdd, path)
	}
	if err != nil {
		return -1, fmt.Errorf("open %q: %w", path, err)
	}
	return fd, nil
}

// openBeneath opens the directory rel below root, refusing symlinks; rel
// comes from filepath.Rel of a path below root, so it has no "..".
func openBeneath(root, rel string) (int, error) {
	p := filepath.Join(root, rel)
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW_ANY|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) {
		return -1, fmt.Errorf("%s: a symbolic link is in the way", p)
	}
	if err != nil {
		return -1, fmt.Errorf("open %q: %w", p, err)
	}
	return fd, nil
}

func renameNoReplace(dirfd int, from, to string) error {
	return unix.RenameatxNp(dirfd, from, dirfd, to, unix.RENAME_EXCL)
}

// allowRead is Linux's only: on macOS a directory the server cannot read
// stays unread (and the scan skips it).
func allowRead(string) bool { return false }
