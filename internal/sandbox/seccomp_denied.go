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

		openat2:  unix.SYS_OPENAT2,
		truncate: unix.SYS_TRUNCATE,

		sigqueueinfo:    unix.SYS_RT_SIGQUEUEINFO,
		tgsigqueueinfo:  unix.SYS_RT_TGSIGQUEUEINFO,
		pidfdSendSignal: unix.SYS_PIDFD_SEND_SIGNAL,
		denied:          append([]uint32(nil), deniedSyscalls...),
		modes:           append([]modeCall(nil), modeCalls...),
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
	// What Docker's default profile refuses to a container without
	// capabilities and nothing here needs. Some already fail without a
	// capability the command lacks in the initial namespace (the clock,
	// syslog with dmesg_restrict set, vhangup, the host and domain names of
	// a UTS namespace it does not own); refusing them here does not rest on
	// that.
	unix.SYS_SYSLOG, // reads the kernel log wherever kernel.dmesg_restrict is 0
	unix.SYS_VHANGUP,
	unix.SYS_SETHOSTNAME,
	unix.SYS_SETDOMAINNAME,
	unix.SYS_CLOCK_SETTIME,
	unix.SYS_SETTIMEOFDAY,
	// fanotify watches files and mounts; unprivileged since Linux 5.13, for
	// inodes a command can read.
	unix.SYS_FANOTIFY_INIT,
	// Memory taken out of the kernel's direct map (fragmenting it), which
	// no tool needs.
	unix.SYS_MEMFD_SECRET,
	// NUMA memory policy and page migration: a command has no business
	// placing memory on the host's nodes (libnuma reports no NUMA and
	// programs carry on, as under Docker).
	unix.SYS_GET_MEMPOLICY,
	unix.SYS_SET_MEMPOLICY,
	unix.SYS_SET_MEMPOLICY_HOME_NODE,
	unix.SYS_MBIND,
	unix.SYS_MIGRATE_PAGES,
	unix.SYS_MOVE_PAGES,
	// Advice on another process's memory, like process_vm_* above.
	unix.SYS_PROCESS_MADVISE,
	// Sets the process's LSM attributes, as writing /proc/self/attr would,
	// which Landlock's read-only / refuses.
	unix.SYS_LSM_SET_SELF_ATTR,
}

// Reviewed against Docker's default profile (moby/profiles seccomp
// default.json) and left allowed, though Docker refuses them:
//
//   - lsm_get_self_attr, lsm_list_modules: read what /proc/self/attr and
//     /sys/kernel/security/lsm show;
//   - file_getattr, file_setattr: what the FS_IOC_FSGETXATTR and
//     FS_IOC_FSSETXATTR ioctls do on a file the command can open; the
//     flags that matter (immutable, append-only, a project id) need
//     capabilities it lacks;
//   - listns (and statmount, listmount, which Docker allows): read what
//     /proc already shows;
//   - uprobe (amd64): only acts from a uprobe trampoline the kernel set up;
//   - rseq_slice_yield: a scheduling hint for the calling thread;
//   - nfsservctl, and on amd64 afs_syscall, getpmsg, putpmsg, tuxcall,
//     security, vserver, create_module, get_kernel_syms, query_module: no
//     kernel the sandbox runs on implements them (ENOSYS).
//
// Docker allows modify_ldt; amd64's deny list refuses it (seccomp_amd64.go).
