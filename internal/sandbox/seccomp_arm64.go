//go:build linux

package sandbox

import "golang.org/x/sys/unix"

// The arm64 syscall table, reviewed up to rseq_slice_yield (471), the last
// number in golang.org/x/sys v0.50.0's zsysnum_linux_arm64.go. The denied
// list is shared (seccomp_denied.go). AArch32 tasks (AUDIT_ARCH_ARM)
// are killed by the arch check; arm64 has no x32-like numbering.
func init() {
	nativeSeccomp = reviewedArch(unix.AUDIT_ARCH_AARCH64, false, 471)
}
