//go:build linux

package sandbox

import "golang.org/x/sys/unix"

// The amd64 syscall table, reviewed up to rseq_slice_yield (471), the last
// number in golang.org/x/sys v0.50.0's zsysnum_linux_amd64.go. The denied
// list is kept in step with seccomp_arm64.go.
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

		denied: []uint32{
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
		},
	}
}
