package gitguard

import (
	"errors"
	"fmt"
	"os"
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

// allowRead gives the owner back read and search permission on a directory
// that has none: a command can take it away to hide a repository from the
// scan, and the user (the same uid) could give it back later, as on Linux
// (file_linux.go). It reports whether it changed anything. The directory
// is changed through its parent, opened refusing symlinks, and is never
// followed itself. A directory an access control list closes (chmod +a)
// stays closed, and unread: the user's tools cannot enter it either until
// the user removes the entry on purpose.
func allowRead(path string) bool {
	parent, err := openNoSymlinks(filepath.Dir(path), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC)
	if err != nil {
		return false
	}
	defer unix.Close(parent)
	name := filepath.Base(path)
	var st unix.Stat_t
	if unix.Fstatat(parent, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR || int(st.Uid) != os.Geteuid() {
		return false
	}
	return unix.Fchmodat(parent, name, uint32(st.Mode&0o7777|0o700), unix.AT_SYMLINK_NOFOLLOW) == nil
}

// allowReadAt is allowRead for the directory path names in the directory
// open at parent (its whole path when parent is -1).
func allowReadAt(parent int, path string) bool {
	if parent < 0 {
		return allowRead(path)
	}
	name := filepath.Base(path)
	var st unix.Stat_t
	if unix.Fstatat(parent, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR || int(st.Uid) != os.Geteuid() {
		return false
	}
	return unix.Fchmodat(parent, name, uint32(st.Mode&0o7777|0o700), unix.AT_SYMLINK_NOFOLLOW) == nil
}

// allowWrite gives the owner back write and search permission on the
// directory open at fd (from openBeneath, so reached through no symlink),
// as on Linux (file_linux.go). It reports whether it changed anything.
func allowWrite(fd int) bool {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR || int(st.Uid) != os.Geteuid() || st.Mode&0o300 == 0o300 {
		return false
	}
	return unix.Fchmod(fd, uint32(st.Mode&0o7777|0o700)) == nil
}

// perProcess reports whether the directory at path is on a file system
// whose entries name one place to the server and another to git: fdesc,
// mounted at /dev/fd, where a number is each process's own descriptor.
func perProcess(path string) bool {
	var st unix.Statfs_t
	if unix.Statfs(path, &st) != nil {
		return false
	}
	n := st.Fstypename[:]
	for i, c := range n {
		if c == 0 {
			n = n[:i]
			break
		}
	}
	return string(n) == "fdesc"
}
