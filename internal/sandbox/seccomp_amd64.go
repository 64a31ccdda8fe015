//go:build linux

package sandbox

import "golang.org/x/sys/unix"

// The amd64 syscall table, reviewed up to rseq_slice_yield (471), the last
// number in golang.org/x/sys v0.50.0's zsysnum_linux_amd64.go. The denied
// list is shared (seccomp_denied.go).
func init() {
	nativeSeccomp = reviewedArch(unix.AUDIT_ARCH_X86_64, true, 471)
}
