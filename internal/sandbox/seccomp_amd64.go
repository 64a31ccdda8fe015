//go:build linux

package sandbox

import "golang.org/x/sys/unix"

// The amd64 syscall table, reviewed up to rseq_slice_yield (471), the last
// number in golang.org/x/sys v0.50.0's zsysnum_linux_amd64.go. The denied
// list is shared (seccomp_denied.go); amd64 adds calls arm64 never had:
// its own denials, and the older calls that set a mode.
func init() {
	a := reviewedArch(unix.AUDIT_ARCH_X86_64, true, 471)
	a.denied = append(a.denied,
		// Segments in the LDT, for 16- and 32-bit code (Wine, DOSEMU),
		// whose system calls the filter kills anyway; a history of
		// kernel bugs. (Docker allows it.)
		unix.SYS_MODIFY_LDT,
		// Port I/O: needs CAP_SYS_RAWIO to raise, and a command has no
		// device to drive. (iopl(0) and turning ports off succeed
		// without it.)
		unix.SYS_IOPL,
		unix.SYS_IOPERM,
		// Obsolete: what glibc no longer wraps and no tool calls.
		unix.SYS_USELIB,
		unix.SYS_USTAT,
		unix.SYS_SYSFS,
		unix.SYS__SYSCTL, // writes sysctls past /proc/sys, where a kernel still has it (before 5.5)
	)
	a.modes = append(a.modes,
		modeCall{nr: unix.SYS_CHMOD, mode: 1, flags: -1},
		modeCall{nr: unix.SYS_MKDIR, mode: 1, flags: -1},
		modeCall{nr: unix.SYS_MKNOD, mode: 1, flags: -1},
		modeCall{nr: unix.SYS_CREAT, mode: 1, flags: -1}, // always creates
		modeCall{nr: unix.SYS_OPEN, mode: 2, flags: 1},
	)
	nativeSeccomp = a
}
