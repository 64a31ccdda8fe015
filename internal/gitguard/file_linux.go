package gitguard

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

func identOf(st *unix.Stat_t) ident {
	return ident{
		Kind: st.Mode & unix.S_IFMT, Dev: st.Dev, Ino: st.Ino, Size: st.Size,
		Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano(),
	}
}

// openNoSymlinks opens path refusing a symlink anywhere in it.
func openNoSymlinks(path string, flags int) (int, error) {
	fd, err := unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{
		Flags:   uint64(flags),
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if errors.Is(err, unix.ELOOP) {
		return -1, fmt.Errorf("%w: a symbolic link is in %s", errOdd, path)
	}
	if err != nil {
		return -1, fmt.Errorf("open %q: %w", path, err)
	}
	return fd, nil
}

// openBeneath opens the directory rel below root (root itself for "."), as
// O_PATH, refusing symlinks and anything that leaves root.
func openBeneath(root, rel string) (int, error) {
	rfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open %q: %w", root, err)
	}
	if rel == "." {
		return rfd, nil
	}
	defer unix.Close(rfd)
	fd, err := unix.Openat2(rfd, rel, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) {
		return -1, fmt.Errorf("%s: a symbolic link is in the way", filepath.Join(root, rel))
	}
	if err != nil {
		return -1, fmt.Errorf("open %q: %w", filepath.Join(root, rel), err)
	}
	return fd, nil
}

func renameNoReplace(dirfd int, from, to string) error {
	return unix.Renameat2(dirfd, from, dirfd, to, unix.RENAME_NOREPLACE)
}

// allowRead gives the owner back read and search permission on a directory
// that has none: a command can take it away to hide a repository from the
// scan, and the user (the same uid) could give it back later. It reports
// whether it changed anything.
func allowRead(path string) bool {
	fd, err := openNoSymlinks(path, unix.O_PATH|unix.O_CLOEXEC)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR || int(st.Uid) != os.Geteuid() {
		return false
	}
	// fchmod refuses an O_PATH descriptor; its /proc link names the same
	// directory, whatever the path now holds.
	return unix.Chmod("/proc/self/fd/"+strconv.Itoa(fd), uint32(st.Mode&0o7777|0o700)) == nil
}

// allowReadAt is allowRead for the directory path names in the directory
// open at parent (its whole path when parent is -1), reached through no
// symbolic link.
func allowReadAt(parent int, path string) bool {
	if parent < 0 {
		return allowRead(path)
	}
	fd, err := unix.Openat(parent, filepath.Base(path), unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR || int(st.Uid) != os.Geteuid() {
		return false // a symbolic link is itself, not a directory
	}
	return unix.Chmod("/proc/self/fd/"+strconv.Itoa(fd), uint32(st.Mode&0o7777|0o700)) == nil
}

// allowWrite gives the owner back write and search permission on the
// directory open at fd (an O_PATH descriptor from openBeneath, so inside
// a root and reached through no symlink): a command can take them away so
// that what it planted cannot be moved aside. It reports whether it
// changed anything.
func allowWrite(fd int) bool {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR || int(st.Uid) != os.Geteuid() || st.Mode&0o300 == 0o300 {
		return false
	}
	return unix.Chmod("/proc/self/fd/"+strconv.Itoa(fd), uint32(st.Mode&0o7777|0o700)) == nil
}

// perProcess reports whether the directory at path is on a procfs, whose
// links (/proc/self, a process's cwd, root and fds) name one place to the
// server and another to git, which reads them in its own process.
func perProcess(path string) bool {
	var st unix.Statfs_t
	return unix.Statfs(path, &st) == nil && st.Type == unix.PROC_SUPER_MAGIC
}
