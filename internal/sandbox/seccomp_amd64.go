//go:build linux

package sandbox

import "golang.org/x/sys/unix"

// The amd64 syscall table, reviewed up to rseq_slice_yield (471), the last
// number in golang.org/x/sys v0.50.0's zsysnum_linux_amd64.go. The denied
// list is shared (seccomp_denied.go).
func init() {
	nativeSeccomp = &seccompArch{
		auditArch:  unix.AUDIT_ARCH_X86_64,
		x32:        true,
		maxSyscall: 471,

		clone:       unix.SYS_CLONE,
		clone3:      unix.SYS_CLONE3,
		unshare:     unix.SYS_UNSHARE,
		ioctl:       unix.SYS_IOCTL,
		personality: unix.SYS_PERSONALITY,
		socket:      unix.SYS_SOCKET,
		socketpair:  unix.SYS_SOCKETPAIR,

		denied: deniedSyscalls,
	}
}
