//go:build linux

package sandbox

import "golang.org/x/sys/unix"

// The amd64 syscall table, reviewed up to rseq_slice_yield (471), the last
// number in golang.org/x/sys v0.50.0's zsysnum_linux_amd64.go. The denied
// list is shared (seccomp_denied.go); amd64 adds the older calls that set
// a mode, which arm64 never had.
func init() {
	a := reviewedArch(unix.AUDIT_ARCH_X86_64, true, 471)
	a.modes = append(a.modes,
		modeCall{nr: unix.SYS_CHMOD, mode: 1, flags: -1},
		modeCall{nr: unix.SYS_MKDIR, mode: 1, flags: -1},
		modeCall{nr: unix.SYS_MKNOD, mode: 1, flags: -1},
		modeCall{nr: unix.SYS_CREAT, mode: 1, flags: -1}, // always creates
		modeCall{nr: unix.SYS_OPEN, mode: 2, flags: 1},
	)
	nativeSeccomp = a
}
