//go:build linux

package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// setMode makes one system call that sets a file mode: call names it (the
// chmod family, a creating open, mkdir or mknod), path is the file, mode
// the raw 64-bit argument. The chmod family works on a file it creates
// first with mode 0644 when path does not exist.
func setMode(call, path string, mode uint64) error {
	p, err := unix.BytePtrFromString(path)
	if err != nil {
		return setupError{err}
	}
	ptr := uintptr(unsafe.Pointer(p))
	fdcwd := unix.AT_FDCWD // a variable: a negative constant does not convert to uintptr
	at := uintptr(fdcwd)
	// sys makes the call; created closes the descriptor a creating call
	// returns.
	sys := func(nr uintptr, args ...uintptr) (uintptr, error) {
		var a [6]uintptr
		copy(a[:], args)
		r, _, e := unix.Syscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5])
		return r, errnoErr(e)
	}
	noResult := func(_ uintptr, err error) error { return err }
	created := func(fd uintptr, err error) error {
		if err == nil {
			unix.Close(int(fd))
		}
		return err
	}
	existing := func() (int, error) {
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CREAT|unix.O_CLOEXEC, 0o644)
		if err != nil {
			return -1, setupError{fmt.Errorf("create %s: %w", path, err)}
		}
		return fd, nil
	}
	const creating = unix.O_CREAT | unix.O_EXCL | unix.O_WRONLY | unix.O_CLOEXEC
	if nr, ok := legacyCalls[call]; ok {
		switch call {
		case "chmod":
			fd, err := existing()
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			return noResult(sys(nr, ptr, uintptr(mode)))
		case "open":
			return created(sys(nr, ptr, creating, uintptr(mode)))
		case "creat":
			return created(sys(nr, ptr, uintptr(mode)))
		case "mknod":
			return noResult(sys(nr, ptr, uintptr(mode|unix.S_IFREG), 0))
		case "mkdir":
			return noResult(sys(nr, ptr, uintptr(mode)))
		}
	}
	switch call {
	case "fchmod":
		fd, err := existing()
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return noResult(sys(unix.SYS_FCHMOD, uintptr(fd), uintptr(mode)))
	case "fchmodat":
		fd, err := existing()
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return noResult(sys(unix.SYS_FCHMODAT, at, ptr, uintptr(mode)))
	case "fchmodat2":
		fd, err := existing()
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return noResult(sys(unix.SYS_FCHMODAT2, at, ptr, uintptr(mode), 0))
	case "chmod-procfd":
		// chmod through the magic link of a descriptor, as a program
		// holding only the descriptor would.
		fd, err := existing()
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		link, _ := unix.BytePtrFromString("/proc/self/fd/" + strconv.Itoa(fd))
		return noResult(sys(unix.SYS_FCHMODAT, at, uintptr(unsafe.Pointer(link)), uintptr(mode)))
	case "openat":
		return created(sys(unix.SYS_OPENAT, at, ptr, creating, uintptr(mode)))
	case "openat2":
		how := unix.OpenHow{Flags: creating, Mode: mode}
		return created(sys(unix.SYS_OPENAT2, at, ptr, uintptr(unsafe.Pointer(&how)), unsafe.Sizeof(how)))
	case "tmpfile":
		// An unnamed file in path's directory, then linked in at path.
		dir, _ := unix.BytePtrFromString(filepath.Dir(path))
		r, _, e := unix.Syscall6(unix.SYS_OPENAT, at, uintptr(unsafe.Pointer(dir)), unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, uintptr(mode), 0, 0)
		if e != 0 {
			return e
		}
		defer unix.Close(int(r))
		if err := unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(int(r)), unix.AT_FDCWD, path, unix.AT_SYMLINK_FOLLOW); err != nil {
			return setupError{fmt.Errorf("link the O_TMPFILE file at %s: %w", path, err)}
		}
		return nil
	case "mkdirat":
		return noResult(sys(unix.SYS_MKDIRAT, at, ptr, uintptr(mode)))
	case "mknodat":
		return noResult(sys(unix.SYS_MKNODAT, at, ptr, uintptr(mode|unix.S_IFREG), 0))
	case "chmod", "open", "creat", "mkdir", "mknod":
		return setupError{errors.New(call + ": no such system call on this architecture")}
	}
	return setupError{fmt.Errorf("unknown call %q", call)}
}

// vfsCapV2 is struct vfs_cap_data, revision 2 (include/uapi/linux/capability.h).
type vfsCapV2 struct {
	MagicEtc uint32
	Data     [2]struct{ Permitted, Inheritable uint32 }
}

// setFileCaps gives path the file capability CAP_SETUID, effective: any
// user who ran it on the host would get that capability.
func setFileCaps(path string) error {
	const (
		vfsCapRevision2      = 0x02000000
		vfsCapFlagsEffective = 0x000001
	)
	v := vfsCapV2{MagicEtc: vfsCapRevision2 | vfsCapFlagsEffective}
	v.Data[0].Permitted = 1 << unix.CAP_SETUID
	b := unsafe.Slice((*byte)(unsafe.Pointer(&v)), unsafe.Sizeof(v))
	return unix.Setxattr(path, "security.capability", b, 0)
}
