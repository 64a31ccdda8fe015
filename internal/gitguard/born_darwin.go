package gitguard

import "golang.org/x/sys/unix"

// bornSince reports whether path was created at or after since.
func bornSince(path string, since int64) bool {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return false
	}
	return st.Btim.Nano() >= since
}
