//go:build linux && (amd64 || arm64)

package sandbox

import "golang.org/x/sys/unix"

// reviewedArch fills in what both reviewed architectures share: the
// syscalls the filter inspects and the deny list, named by the same x/sys
// constants, which x/sys numbers per architecture.
func reviewedArch(auditArch uint32, x32 bool, maxSyscall uint32) *seccompArch {
	return &seccompArch{
		auditArch:  auditArch,
		x32:        x32,
		maxSyscall: maxSyscall,

		clone:       unix.SYS_CLONE,
		clone3:      unix.SYS_CLONE3,
		unshare:     unix.SYS_UNSHARE,
		ioctl:       unix.SYS_IOCTL,
		personality: unix.SYS_PERSONALITY,
		socket:      unix.SYS_SOCKET,
		socketpair:  unix.SYS_SOCKETPAIR,

		openat2: unix.SYS_OPENAT2,
		denied:  append([]uint32(nil), deniedSyscalls...),
		modes:   append([]modeCall(nil), modeCalls...),
	}
}

// modeCalls are the syscalls both reviewed architectures have that set a
// file mode (the arch files add amd64's older ones).
var modeCalls = []modeCall{
	{nr: unix.SYS_FCHMOD, mode: 1, flags: -1},
	{nr: unix.SYS_FCHMODAT, mode: 2, flags: -1},
	{nr: unix.SYS_FCHMODAT2, mode: 2, flags: -1},
	{nr: unix.SYS_MKDIRAT, mode: 2, flags: -1},
	{nr: unix.SYS_MKNODAT, mode: 2, flags: -1},
	{nr: unix.SYS_OPENAT, mode: 3, flags: 2},
}

// deniedSyscalls are refused with EPERM whatever their arguments, on every
// architecture with a reviewed table: each arch file names the same
// constants, which x/sys numbers per architecture.
var deniedSyscalls = []uint32{
	// Other namespaces and other processes' memory.
	unix.SYS_SETNS,
	unix.SYS_PTRACE,
	unix.SYS_PROCESS_VM_READV,
	unix.SYS_PROCESS_VM_WRITEV,
	unix.SYS_KCMP,
	unix.SYS_PIDFD_GETFD,
	// Kernel keyrings, BPF, perf, userfaultfd, io_uring: large
	// attack surface, no use for a command.
	unix.SYS_KEYCTL,
	unix.SYS_ADD_KEY,
	unix.SYS_REQUEST_KEY,
	unix.SYS_BPF,
	unix.SYS_PERF_EVENT_OPEN,
	unix.SYS_USERFAULTFD,
	unix.SYS_IO_URING_SETUP,
	unix.SYS_IO_URING_ENTER,
	unix.SYS_IO_URING_REGISTER,
	// The mount API, old and new.
	unix.SYS_MOUNT,
	unix.SYS_UMOUNT2,
	unix.SYS_PIVOT_ROOT,
	unix.SYS_CHROOT,
	unix.SYS_MOVE_MOUNT,
	unix.SYS_OPEN_TREE,
	unix.SYS_OPEN_TREE_ATTR,
	unix.SYS_FSOPEN,
	unix.SYS_FSCONFIG,
	unix.SYS_FSMOUNT,
	unix.SYS_FSPICK,
	unix.SYS_MOUNT_SETATTR,
	// File handles reach files by inode, around the mount tree.
	unix.SYS_OPEN_BY_HANDLE_AT,
	unix.SYS_NAME_TO_HANDLE_AT,
	// The machine's kernel, swap, quotas and power.
	unix.SYS_KEXEC_LOAD,
	unix.SYS_KEXEC_FILE_LOAD,
	unix.SYS_INIT_MODULE,
	unix.SYS_FINIT_MODULE,
	unix.SYS_DELETE_MODULE,
	unix.SYS_ACCT,
	unix.SYS_SWAPON,
	unix.SYS_SWAPOFF,
	unix.SYS_REBOOT,
	unix.SYS_QUOTACTL,
	unix.SYS_QUOTACTL_FD,
	unix.SYS_LOOKUP_DCOOKIE,
}
