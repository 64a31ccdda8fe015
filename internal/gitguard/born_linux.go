package gitguard

import "golang.org/x/sys/unix"

// bornSince reports whether path was created (or, where the filesystem
// keeps no birth time, last changed) at or after since.
func bornSince(path string, since int64) bool {
	var stx unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BTIME|unix.STATX_CTIME, &stx); err != nil {
		return false
	}
	t := stx.Ctime
	if stx.Mask&unix.STATX_BTIME != 0 {
		t = stx.Btime
	}
	return t.Sec*1e9+int64(t.Nsec) >= since
}
