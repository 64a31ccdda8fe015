//go:build linux && (amd64 || arm64)

package sandbox

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/nanosandbox/nanosandbox-mcp/internal/sandbox/sandboxtest"
)

// seccompAction is a seccomp filter's verdict, printed the way the tests want it.
type seccompAction uint32

const (
	actAllow = seccompAction(unix.SECCOMP_RET_ALLOW)
	actKill  = seccompAction(unix.SECCOMP_RET_KILL_PROCESS)
)

func actErrno(errno unix.Errno) seccompAction {
	return seccompAction(unix.SECCOMP_RET_ERRNO | uint32(errno))
}

func (a seccompAction) String() string {
	switch uint32(a) & unix.SECCOMP_RET_ACTION_FULL {
	case unix.SECCOMP_RET_ALLOW:
		return "ALLOW"
	case unix.SECCOMP_RET_KILL_PROCESS:
		return "KILL_PROCESS"
	case unix.SECCOMP_RET_ERRNO:
		return "ERRNO(" + unix.ErrnoName(unix.Errno(uint32(a)&unix.SECCOMP_RET_DATA)) + ")"
	}
	return fmt.Sprintf("%#x", uint32(a))
}

// seccompData is the struct the kernel hands a filter; see seccomp_linux.go.
type seccompData struct {
	nr   uint32
	arch uint32
	args [6]uint64
}

func (d seccompData) bytes() []byte {
	b := make([]byte, 64)
	binary.LittleEndian.PutUint32(b[0:], d.nr)
	binary.LittleEndian.PutUint32(b[4:], d.arch)
	binary.LittleEndian.PutUint64(b[8:], 0x400000) // instruction_pointer, never read
	for i, a := range d.args {
		binary.LittleEndian.PutUint64(b[16+8*i:], a)
	}
	return b
}

// native is a syscall in the native calling convention.
func nativeCall(nr uint32, args ...uint64) seccompData {
	d := seccompData{nr: nr, arch: nativeSeccomp.auditArch}
	copy(d.args[:], args)
	return d
}

// runSeccomp interprets prog on d as the kernel would, knowing only the
// instructions seccomp_linux.go emits, and fails t on anything else.
func runSeccomp(t *testing.T, prog []unix.SockFilter, d seccompData) seccompAction {
	t.Helper()
	data := d.bytes()
	var acc uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		jump := func(cond bool) {
			if cond {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		}
		switch in.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			if in.K%4 != 0 || int(in.K)+4 > len(data) {
				t.Fatalf("instruction %d loads offset %d, outside seccomp_data or unaligned", pc, in.K)
			}
			acc = binary.LittleEndian.Uint32(data[in.K:])
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K:
			jump(acc == in.K)
		case unix.BPF_JMP | unix.BPF_JGT | unix.BPF_K:
			jump(acc > in.K)
		case unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K:
			jump(acc&in.K != 0)
		case unix.BPF_ALU | unix.BPF_AND | unix.BPF_K:
			acc &= in.K
		case unix.BPF_RET | unix.BPF_K:
			return seccompAction(in.K)
		default:
			t.Fatalf("instruction %d: code %#x unknown to this interpreter", pc, in.Code)
		}
	}
	t.Fatalf("program fell off its end")
	return 0
}

func mustSeccompProgram(t *testing.T) []unix.SockFilter {
	t.Helper()
	prog, err := seccompProgram(filterOptions{})
	if err != nil {
		t.Fatalf("seccompProgram: %v", err)
	}
	return prog
}

// seccompDenied is every syscall that fails with EPERM whatever its
// arguments, listed here apart from the tables under test (archDenied adds
// the architecture's own).
var seccompDenied = append([]seccompSyscall{
	{"setns", unix.SYS_SETNS},
	{"ptrace", unix.SYS_PTRACE},
	{"process_vm_readv", unix.SYS_PROCESS_VM_READV},
	{"process_vm_writev", unix.SYS_PROCESS_VM_WRITEV},
	{"kcmp", unix.SYS_KCMP},
	{"pidfd_getfd", unix.SYS_PIDFD_GETFD},
	{"keyctl", unix.SYS_KEYCTL},
	{"add_key", unix.SYS_ADD_KEY},
	{"request_key", unix.SYS_REQUEST_KEY},
	{"bpf", unix.SYS_BPF},
	{"perf_event_open", unix.SYS_PERF_EVENT_OPEN},
	{"userfaultfd", unix.SYS_USERFAULTFD},
	{"mount", unix.SYS_MOUNT},
	{"umount2", unix.SYS_UMOUNT2},
	{"pivot_root", unix.SYS_PIVOT_ROOT},
	{"chroot", unix.SYS_CHROOT},
	{"move_mount", unix.SYS_MOVE_MOUNT},
	{"open_tree", unix.SYS_OPEN_TREE},
	{"open_tree_attr", unix.SYS_OPEN_TREE_ATTR},
	{"fsopen", unix.SYS_FSOPEN},
	{"fsconfig", unix.SYS_FSCONFIG},
	{"fsmount", unix.SYS_FSMOUNT},
	{"fspick", unix.SYS_FSPICK},
	{"mount_setattr", unix.SYS_MOUNT_SETATTR},
	{"kexec_load", unix.SYS_KEXEC_LOAD},
	{"kexec_file_load", unix.SYS_KEXEC_FILE_LOAD},
	{"init_module", unix.SYS_INIT_MODULE},
	{"finit_module", unix.SYS_FINIT_MODULE},
	{"delete_module", unix.SYS_DELETE_MODULE},
	{"io_uring_setup", unix.SYS_IO_URING_SETUP},
	{"io_uring_enter", unix.SYS_IO_URING_ENTER},
	{"io_uring_register", unix.SYS_IO_URING_REGISTER},
	{"open_by_handle_at", unix.SYS_OPEN_BY_HANDLE_AT},
	{"name_to_handle_at", unix.SYS_NAME_TO_HANDLE_AT},
	{"acct", unix.SYS_ACCT},
	{"swapon", unix.SYS_SWAPON},
	{"swapoff", unix.SYS_SWAPOFF},
	{"reboot", unix.SYS_REBOOT},
	{"quotactl", unix.SYS_QUOTACTL},
	{"quotactl_fd", unix.SYS_QUOTACTL_FD},
	{"lookup_dcookie", unix.SYS_LOOKUP_DCOOKIE},
	{"syslog", unix.SYS_SYSLOG},
	{"vhangup", unix.SYS_VHANGUP},
	{"sethostname", unix.SYS_SETHOSTNAME},
	{"setdomainname", unix.SYS_SETDOMAINNAME},
	{"clock_settime", unix.SYS_CLOCK_SETTIME},
	{"settimeofday", unix.SYS_SETTIMEOFDAY},
	{"fanotify_init", unix.SYS_FANOTIFY_INIT},
	{"memfd_secret", unix.SYS_MEMFD_SECRET},
	{"get_mempolicy", unix.SYS_GET_MEMPOLICY},
	{"set_mempolicy", unix.SYS_SET_MEMPOLICY},
	{"set_mempolicy_home_node", unix.SYS_SET_MEMPOLICY_HOME_NODE},
	{"mbind", unix.SYS_MBIND},
	{"migrate_pages", unix.SYS_MIGRATE_PAGES},
	{"move_pages", unix.SYS_MOVE_PAGES},
	{"process_madvise", unix.SYS_PROCESS_MADVISE},
	{"lsm_set_self_attr", unix.SYS_LSM_SET_SELF_ATTR},
}, archDenied...)

// seccompSyscall names a syscall number.
type seccompSyscall struct {
	name string
	nr   uint32
}

// seccompModeCall is a syscall that sets a file mode: its mode argument and,
// for an open, its flags argument (-1 for none).
type seccompModeCall struct {
	name        string
	nr          uint32
	mode, flags int
}

// seccompModeCalls is every syscall that sets a file mode, listed here apart
// from the tables under test (archModeCalls adds the architecture's own).
var seccompModeCalls = append([]seccompModeCall{
	{"fchmod", unix.SYS_FCHMOD, 1, -1},
	{"fchmodat", unix.SYS_FCHMODAT, 2, -1},
	{"fchmodat2", unix.SYS_FCHMODAT2, 2, -1},
	{"mkdirat", unix.SYS_MKDIRAT, 2, -1},
	{"mknodat", unix.SYS_MKNODAT, 2, -1},
	{"openat", unix.SYS_OPENAT, 3, 2},
}, archModeCalls...)

const (
	// argHighBits is set in the upper half of a 64-bit argument: the kernel
	// ignores it for every argument the filter inspects, so must the filter.
	argHighBits = 0xdead_beef_0000_0000
	// reviewedMaxSyscall is the last syscall number reviewed on amd64 and arm64
	// (rseq_slice_yield in golang.org/x/sys v0.50.0).
	reviewedMaxSyscall = 471

	// Personality flags (include/uapi/linux/personality.h), which x/sys lacks.
	addrNoRandomize = 0x0040000
	readImpliesExec = 0x0400000
	perLinux32      = 0x0008
)

func TestSeccompProgram(t *testing.T) {
	prog := mustSeccompProgram(t)
	t.Logf("%d instructions for linux/%s", len(prog), runtime.GOARCH)

	x32Want := actKill
	if !nativeSeccomp.x32 {
		x32Want = actErrno(unix.ENOSYS) // no x32 ABI: just a number above the table
	}
	threadFlags := uint64(unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND |
		unix.CLONE_SYSVSEM | unix.CLONE_THREAD | unix.CLONE_SETTLS | unix.CLONE_PARENT_SETTID | unix.CLONE_CHILD_CLEARTID)
	forkFlags := uint64(unix.CLONE_CHILD_SETTID | unix.CLONE_CHILD_CLEARTID | uint64(unix.SIGCHLD))

	tests := []struct {
		name string
		data seccompData
		want seccompAction
	}{
		{"write", nativeCall(unix.SYS_WRITE, 1, 0, 5), actAllow},
		{"futex", nativeCall(unix.SYS_FUTEX), actAllow},
		{"mmap", nativeCall(unix.SYS_MMAP), actAllow},
		{"rt_sigaction", nativeCall(unix.SYS_RT_SIGACTION), actAllow},
		{"execve", nativeCall(unix.SYS_EXECVE), actAllow},
		{"seccomp", nativeCall(unix.SYS_SECCOMP), actAllow},
		{"last reviewed", nativeCall(reviewedMaxSyscall), actAllow},

		{"foreign arch i386 (int 0x80)", seccompData{nr: 26 /* i386 ptrace */, arch: unix.AUDIT_ARCH_I386}, actKill},
		{"foreign arch i386 write", seccompData{nr: 4, arch: unix.AUDIT_ARCH_I386}, actKill},
		{"foreign arch arm (AArch32)", seccompData{nr: 4, arch: unix.AUDIT_ARCH_ARM}, actKill},
		{"foreign arch arch zero", seccompData{nr: unix.SYS_WRITE}, actKill},
		{"x32 bit", nativeCall(x32SyscallBit | unix.SYS_WRITE), x32Want},
		{"x32 bit ptrace", nativeCall(x32SyscallBit | unix.SYS_PTRACE), x32Want},
		{"x32 bit alone", nativeCall(x32SyscallBit), x32Want},

		{"above reviewed", nativeCall(reviewedMaxSyscall + 1), actErrno(unix.ENOSYS)},
		{"far above reviewed", nativeCall(0x3fffffff), actErrno(unix.ENOSYS)},
		{"sign bit", nativeCall(0x80000000), actErrno(unix.ENOSYS)},
		{"syscall -1", nativeCall(noSyscall), actErrno(unix.ENOSYS)},
		{"clone3", nativeCall(unix.SYS_CLONE3), actErrno(unix.ENOSYS)},

		{"clone thread", nativeCall(unix.SYS_CLONE, threadFlags), actAllow},
		{"clone fork", nativeCall(unix.SYS_CLONE, forkFlags), actAllow},
		{"clone vfork pidfd", nativeCall(unix.SYS_CLONE, unix.CLONE_VM|unix.CLONE_VFORK|unix.CLONE_PIDFD|uint64(unix.SIGCHLD)), actAllow},
		{"clone exit signal 0x80", nativeCall(unix.SYS_CLONE, 0x80), actAllow},
		{"clone high bits", nativeCall(unix.SYS_CLONE, forkFlags|argHighBits), actAllow},
		{"clone CLONE_NEWUSER", nativeCall(unix.SYS_CLONE, unix.CLONE_NEWUSER|uint64(unix.SIGCHLD)), actErrno(unix.EPERM)},
		{"clone CLONE_NEWNS", nativeCall(unix.SYS_CLONE, unix.CLONE_NEWNS), actErrno(unix.EPERM)},
		{"clone CLONE_NEWPID", nativeCall(unix.SYS_CLONE, unix.CLONE_NEWPID), actErrno(unix.EPERM)},
		{"clone CLONE_NEWNET", nativeCall(unix.SYS_CLONE, unix.CLONE_NEWNET), actErrno(unix.EPERM)},
		{"clone CLONE_NEWIPC", nativeCall(unix.SYS_CLONE, unix.CLONE_NEWIPC), actErrno(unix.EPERM)},
		{"clone CLONE_NEWUTS", nativeCall(unix.SYS_CLONE, unix.CLONE_NEWUTS), actErrno(unix.EPERM)},
		{"clone CLONE_NEWCGROUP", nativeCall(unix.SYS_CLONE, unix.CLONE_NEWCGROUP), actErrno(unix.EPERM)},
		{"clone thread CLONE_NEWNET", nativeCall(unix.SYS_CLONE, threadFlags|unix.CLONE_NEWNET), actErrno(unix.EPERM)},

		{"unshare files", nativeCall(unix.SYS_UNSHARE, unix.CLONE_FILES|unix.CLONE_FS), actAllow},
		{"unshare zero", nativeCall(unix.SYS_UNSHARE, 0), actAllow},
		{"unshare CLONE_NEWNET", nativeCall(unix.SYS_UNSHARE, unix.CLONE_NEWNET), actErrno(unix.EPERM)},
		{"unshare CLONE_NEWUSER", nativeCall(unix.SYS_UNSHARE, unix.CLONE_NEWUSER), actErrno(unix.EPERM)},
		{"unshare CLONE_NEWNS", nativeCall(unix.SYS_UNSHARE, unix.CLONE_NEWNS), actErrno(unix.EPERM)},
		{"unshare CLONE_NEWTIME", nativeCall(unix.SYS_UNSHARE, unix.CLONE_NEWTIME), actErrno(unix.EPERM)},
		{"unshare CLONE_NEWCGROUP high bits", nativeCall(unix.SYS_UNSHARE, unix.CLONE_NEWCGROUP|argHighBits), actErrno(unix.EPERM)},

		{"ioctl TIOCSTI", nativeCall(unix.SYS_IOCTL, 0, unix.TIOCSTI), actErrno(unix.EPERM)},
		{"ioctl TIOCSTI high bits", nativeCall(unix.SYS_IOCTL, 0, unix.TIOCSTI|0x1_0000_0000), actErrno(unix.EPERM)},
		{"ioctl TIOCSTI all high bits", nativeCall(unix.SYS_IOCTL, 0, unix.TIOCSTI|argHighBits), actErrno(unix.EPERM)},
		{"ioctl TIOCLINUX", nativeCall(unix.SYS_IOCTL, 0, unix.TIOCLINUX), actErrno(unix.EPERM)},
		{"ioctl TIOCLINUX high bits", nativeCall(unix.SYS_IOCTL, 0, unix.TIOCLINUX|argHighBits), actErrno(unix.EPERM)},
		{"ioctl TIOCGWINSZ", nativeCall(unix.SYS_IOCTL, 0, unix.TIOCGWINSZ), actAllow},
		{"ioctl TCGETS", nativeCall(unix.SYS_IOCTL, 3, unix.TCGETS), actAllow},
		{"ioctl fd is TIOCSTI", nativeCall(unix.SYS_IOCTL, unix.TIOCSTI, unix.TCGETS), actAllow},

		{"rt_sigqueueinfo pid 1", nativeCall(unix.SYS_RT_SIGQUEUEINFO, 1, uint64(unix.SIGSEGV), 0x7000), actErrno(unix.EPERM)},
		{"rt_sigqueueinfo pid 1 high bits", nativeCall(unix.SYS_RT_SIGQUEUEINFO, 1|argHighBits, uint64(unix.SIGSEGV), 0x7000), actErrno(unix.EPERM)},
		{"rt_sigqueueinfo pid 2", nativeCall(unix.SYS_RT_SIGQUEUEINFO, 2, uint64(unix.SIGSEGV), 0x7000), actAllow},
		{"rt_tgsigqueueinfo pid 1", nativeCall(unix.SYS_RT_TGSIGQUEUEINFO, 1, 1, uint64(unix.SIGBUS), 0x7000), actErrno(unix.EPERM)},
		{"rt_tgsigqueueinfo pid 7", nativeCall(unix.SYS_RT_TGSIGQUEUEINFO, 7, 7, uint64(unix.SIGBUS), 0x7000), actAllow},
		{"pidfd_send_signal no siginfo", nativeCall(unix.SYS_PIDFD_SEND_SIGNAL, 3, uint64(unix.SIGTERM), 0, 0), actAllow},
		{"pidfd_send_signal siginfo", nativeCall(unix.SYS_PIDFD_SEND_SIGNAL, 3, uint64(unix.SIGSEGV), 0x7000, 0), actErrno(unix.EPERM)},
		{"pidfd_send_signal siginfo high half", nativeCall(unix.SYS_PIDFD_SEND_SIGNAL, 3, uint64(unix.SIGSEGV), 0x1_0000_0000, 0), actErrno(unix.EPERM)},

		{"personality default", nativeCall(unix.SYS_PERSONALITY, 0), actAllow},
		{"personality query", nativeCall(unix.SYS_PERSONALITY, 0xffffffff), actAllow},
		{"personality ADDR_NO_RANDOMIZE", nativeCall(unix.SYS_PERSONALITY, addrNoRandomize), actErrno(unix.EPERM)},
		{"personality READ_IMPLIES_EXEC", nativeCall(unix.SYS_PERSONALITY, readImpliesExec), actErrno(unix.EPERM)},
		{"personality PER_LINUX32", nativeCall(unix.SYS_PERSONALITY, perLinux32), actErrno(unix.EPERM)},
		{"personality query high bits", nativeCall(unix.SYS_PERSONALITY, 0xffffffff|argHighBits), actAllow},

		{"socket AF_UNIX", nativeCall(unix.SYS_SOCKET, unix.AF_UNIX, unix.SOCK_STREAM), actAllow},
		{"socket AF_INET tcp", nativeCall(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, 0), actAllow},
		{"socket AF_INET tcp explicit", nativeCall(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP), actAllow},
		{"socket AF_INET6 udp", nativeCall(unix.SYS_SOCKET, unix.AF_INET6, unix.SOCK_DGRAM, unix.IPPROTO_UDP), actAllow},
		{"socket AF_INET high bits", nativeCall(unix.SYS_SOCKET, unix.AF_INET|argHighBits, unix.SOCK_STREAM, argHighBits), actAllow},
		{"socket AF_NETLINK", nativeCall(unix.SYS_SOCKET, unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE), actAllow},
		{"socket AF_INET MPTCP", nativeCall(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_MPTCP), actErrno(unix.EPROTONOSUPPORT)},
		{"socket AF_INET6 MPTCP", nativeCall(unix.SYS_SOCKET, unix.AF_INET6, unix.SOCK_STREAM, unix.IPPROTO_MPTCP), actErrno(unix.EPROTONOSUPPORT)},
		{"socket AF_INET MPTCP high bits", nativeCall(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_MPTCP|argHighBits), actErrno(unix.EPROTONOSUPPORT)},
		{"socket AF_VSOCK", nativeCall(unix.SYS_SOCKET, unix.AF_VSOCK, unix.SOCK_STREAM), actErrno(unix.EAFNOSUPPORT)},
		{"socket AF_VSOCK high bits", nativeCall(unix.SYS_SOCKET, unix.AF_VSOCK|argHighBits, unix.SOCK_STREAM), actErrno(unix.EAFNOSUPPORT)},
		{"socket AF_PACKET", nativeCall(unix.SYS_SOCKET, unix.AF_PACKET, unix.SOCK_RAW), actErrno(unix.EAFNOSUPPORT)},
		{"socket AF_ALG", nativeCall(unix.SYS_SOCKET, unix.AF_ALG, unix.SOCK_SEQPACKET), actErrno(unix.EAFNOSUPPORT)},
		{"socket AF_UNSPEC", nativeCall(unix.SYS_SOCKET, unix.AF_UNSPEC), actErrno(unix.EAFNOSUPPORT)},
		{"socket AF_NETLINK MPTCP number", nativeCall(unix.SYS_SOCKET, unix.AF_NETLINK, unix.SOCK_RAW, unix.IPPROTO_MPTCP), actAllow},
		{"socketpair AF_UNIX", nativeCall(unix.SYS_SOCKETPAIR, unix.AF_UNIX, unix.SOCK_STREAM), actAllow},
		{"socketpair AF_VSOCK", nativeCall(unix.SYS_SOCKETPAIR, unix.AF_VSOCK, unix.SOCK_STREAM), actErrno(unix.EAFNOSUPPORT)},
		{"socketpair AF_INET MPTCP", nativeCall(unix.SYS_SOCKETPAIR, unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_MPTCP), actErrno(unix.EPROTONOSUPPORT)},
	}
	for _, d := range seccompDenied {
		tests = append(tests, struct {
			name string
			data seccompData
			want seccompAction
		}{d.name, nativeCall(d.nr, 1, 2, 3, 4, 5, 6), actErrno(unix.EPERM)})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := runSeccomp(t, prog, tt.data); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSeccompProgramModes(t *testing.T) {
	prog := mustSeccompProgram(t)
	const sUID, sGID = unix.S_ISUID, unix.S_ISGID
	for _, c := range seccompModeCalls {
		type row struct {
			name        string
			mode, flags uint64
			want        seccompAction
		}
		creating := uint64(unix.O_CREAT | unix.O_WRONLY | unix.O_TRUNC)
		rows := []row{
			{"0755", 0o755, creating, actAllow},
			{"sticky 1777", 0o1777, creating, actAllow},
			{"0", 0, creating, actAllow},
			{"setuid", sUID | 0o755, creating, actErrno(unix.EPERM)},
			{"setgid", sGID | 0o755, creating, actErrno(unix.EPERM)},
			{"setgid alone", sGID, creating, actErrno(unix.EPERM)},
			{"both", sUID | sGID | 0o777, creating, actErrno(unix.EPERM)},
			{"setuid with file type", unix.S_IFREG | sUID | 0o755, creating, actErrno(unix.EPERM)},
			// umode_t is 16 bits: the kernel drops bit 16 and keeps S_ISUID.
			{"setuid with bit 16", 1<<16 | sUID | 0o755, creating, actErrno(unix.EPERM)},
			{"setuid with high bits", argHighBits | sUID | 0o755, creating, actErrno(unix.EPERM)},
			{"high bits only", argHighBits | 0o755, creating, actAllow},
		}
		if c.flags >= 0 {
			rows = append(rows,
				row{"setuid without O_CREAT", sUID | 0o755, unix.O_RDWR, actAllow},
				row{"setuid, O_CREAT alone", sUID | 0o755, unix.O_CREAT, actErrno(unix.EPERM)},
				row{"setuid, O_TMPFILE", sUID | 0o755, unix.O_TMPFILE | unix.O_RDWR, actErrno(unix.EPERM)},
				row{"setgid, __O_TMPFILE without O_DIRECTORY", sGID, unix.O_TMPFILE &^ unix.O_DIRECTORY, actErrno(unix.EPERM)},
				row{"setuid, O_CREAT with high bits", sUID, unix.O_CREAT | argHighBits, actErrno(unix.EPERM)},
				// The kernel takes flags as an int: high bits are not O_CREAT.
				row{"setuid, flags with high bits only", sUID, argHighBits, actAllow},
			)
		}
		for _, r := range rows {
			t.Run(c.name+" "+r.name, func(t *testing.T) {
				args := []uint64{3, 0x7fff0000, 0, 0, 0, 0}
				args[c.mode] = r.mode
				if c.flags >= 0 {
					args[c.flags] = r.flags
				}
				if got := runSeccomp(t, prog, nativeCall(c.nr, args...)); got != r.want {
					t.Errorf("args %#x: got %v, want %v", args, got, r.want)
				}
			})
		}
	}
	for _, flags := range []uint64{0, unix.O_RDONLY, unix.O_CREAT} {
		if got, want := runSeccomp(t, prog, nativeCall(unix.SYS_OPENAT2, 3, 0x7fff0000, flags)), actErrno(unix.ENOSYS); got != want {
			t.Errorf("openat2: got %v, want %v", got, want)
		}
	}
}

// TestSeccompProgramAllowsTheRest walks every reviewed number with zero
// arguments: only the listed syscalls may be refused.
// TestSeccompProgramWithoutNamespaces: the options of the filter without
// namespaces refuse what the namespaces kept from commands, and the zero
// options are the full sandbox's filter.
func TestSeccompProgramWithoutNamespaces(t *testing.T) {
	stream, seqpacket, dgram := uint64(unix.SOCK_STREAM), uint64(unix.SOCK_SEQPACKET), uint64(unix.SOCK_DGRAM)
	flags := uint64(unix.SOCK_CLOEXEC | unix.SOCK_NONBLOCK)
	eaf := actErrno(unix.EAFNOSUPPORT)
	for _, tt := range []struct {
		name string
		o    filterOptions
		data seccompData
		want seccompAction
	}{
		{"full: unix socket", filterOptions{}, nativeCall(unix.SYS_SOCKET, unix.AF_UNIX, stream), actAllow},
		{"full: inet socket", filterOptions{}, nativeCall(unix.SYS_SOCKET, unix.AF_INET, stream), actAllow},
		{"full: netlink socket", filterOptions{}, nativeCall(unix.SYS_SOCKET, unix.AF_NETLINK, dgram), actAllow},
		{"full: datagram pair", filterOptions{}, nativeCall(unix.SYS_SOCKETPAIR, unix.AF_UNIX, dgram), actAllow},
		{"full: truncate", filterOptions{}, nativeCall(unix.SYS_TRUNCATE), actAllow},

		{"no network: inet", filterOptions{NoNetwork: true}, nativeCall(unix.SYS_SOCKET, unix.AF_INET, stream), eaf},
		{"no network: inet6", filterOptions{NoNetwork: true}, nativeCall(unix.SYS_SOCKET, unix.AF_INET6, dgram), eaf},
		{"no network: netlink", filterOptions{NoNetwork: true}, nativeCall(unix.SYS_SOCKET, unix.AF_NETLINK, dgram), eaf},
		{"no network: packet", filterOptions{NoNetwork: true}, nativeCall(unix.SYS_SOCKET, unix.AF_PACKET, dgram), eaf},
		{"no network: unix", filterOptions{NoNetwork: true}, nativeCall(unix.SYS_SOCKET, unix.AF_UNIX, stream), actAllow},
		{"no network: unix, high bits", filterOptions{NoNetwork: true}, nativeCall(unix.SYS_SOCKET, 1<<32|unix.AF_INET, stream), eaf},

		{"no unix: socket", filterOptions{NoUnixSocket: true}, nativeCall(unix.SYS_SOCKET, unix.AF_UNIX, stream), eaf},
		{"no unix: inet still", filterOptions{NoUnixSocket: true}, nativeCall(unix.SYS_SOCKET, unix.AF_INET, stream), actAllow},
		{"no unix: stream pair", filterOptions{NoUnixSocket: true}, nativeCall(unix.SYS_SOCKETPAIR, unix.AF_UNIX, stream|flags), actAllow},
		{"no unix: seqpacket pair", filterOptions{NoUnixSocket: true}, nativeCall(unix.SYS_SOCKETPAIR, unix.AF_UNIX, seqpacket), actAllow},
		{"no unix: datagram pair", filterOptions{NoUnixSocket: true}, nativeCall(unix.SYS_SOCKETPAIR, unix.AF_UNIX, dgram|flags), eaf},
		{"no unix: raw pair", filterOptions{NoUnixSocket: true}, nativeCall(unix.SYS_SOCKETPAIR, unix.AF_UNIX, unix.SOCK_RAW), eaf},
		{"no unix, no network: socket", filterOptions{NoUnixSocket: true, NoNetwork: true}, nativeCall(unix.SYS_SOCKET, unix.AF_UNIX, stream), eaf},
		{"no unix, no network: inet", filterOptions{NoUnixSocket: true, NoNetwork: true}, nativeCall(unix.SYS_SOCKET, unix.AF_INET, stream), eaf},
		{"no unix, no network: stream pair", filterOptions{NoUnixSocket: true, NoNetwork: true}, nativeCall(unix.SYS_SOCKETPAIR, unix.AF_UNIX, stream), actAllow},

		{"no truncate", filterOptions{NoTruncate: true}, nativeCall(unix.SYS_TRUNCATE), actErrno(unix.EPERM)},
		{"no truncate: ftruncate", filterOptions{NoTruncate: true}, nativeCall(unix.SYS_FTRUNCATE), actAllow},
		{"every option: ptrace still", filterOptions{NoNetwork: true, NoUnixSocket: true, NoTruncate: true}, nativeCall(unix.SYS_PTRACE), actErrno(unix.EPERM)},
		{"every option: write", filterOptions{NoNetwork: true, NoUnixSocket: true, NoTruncate: true}, nativeCall(unix.SYS_WRITE), actAllow},
	} {
		t.Run(tt.name, func(t *testing.T) {
			prog, err := seccompProgram(tt.o)
			if err != nil {
				t.Fatal(err)
			}
			if got := runSeccomp(t, prog, tt.data); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
	full, _ := seccompProgram(filterOptions{})
	if got := mustSeccompProgram(t); len(got) != len(full) {
		t.Errorf("the zero options changed the filter")
	}
}

func TestSeccompProgramAllowsTheRest(t *testing.T) {
	prog := mustSeccompProgram(t)
	want := map[uint32]seccompAction{
		unix.SYS_CLONE3:     actErrno(unix.ENOSYS),
		unix.SYS_OPENAT2:    actErrno(unix.ENOSYS),
		unix.SYS_SOCKET:     actErrno(unix.EAFNOSUPPORT), // family 0 is AF_UNSPEC
		unix.SYS_SOCKETPAIR: actErrno(unix.EAFNOSUPPORT),
	}
	for _, d := range seccompDenied {
		want[d.nr] = actErrno(unix.EPERM)
	}
	for nr := uint32(0); nr <= reviewedMaxSyscall; nr++ {
		w, ok := want[nr]
		if !ok {
			w = actAllow
		}
		if got := runSeccomp(t, prog, nativeCall(nr)); got != w {
			t.Errorf("syscall %d: got %v, want %v", nr, got, w)
		}
	}
}

func TestSeccompProgramForeignArch(t *testing.T) {
	prog := mustSeccompProgram(t)
	for _, arch := range []uint32{unix.AUDIT_ARCH_I386, unix.AUDIT_ARCH_X86_64, unix.AUDIT_ARCH_ARM, unix.AUDIT_ARCH_AARCH64, unix.AUDIT_ARCH_RISCV64} {
		if arch == nativeSeccomp.auditArch {
			continue
		}
		for _, nr := range []uint32{0, 1, 26, 101, unix.SYS_WRITE} {
			if got := runSeccomp(t, prog, seccompData{nr: nr, arch: arch}); got != actKill {
				t.Errorf("arch %#x syscall %d: got %v, want %v", arch, nr, got, actKill)
			}
		}
	}
}

func TestSeccompProgramUnsupportedArch(t *testing.T) {
	saved := nativeSeccomp
	t.Cleanup(func() { nativeSeccomp = saved })
	nativeSeccomp = nil
	_, err := seccompProgram(filterOptions{})
	if !errors.Is(err, ErrUnsupported) {
		t.Errorf("got %v, want %v", err, ErrUnsupported)
	}
}

func TestSeccompAssemble(t *testing.T) {
	r := bpfRet(unix.SECCOMP_RET_ALLOW)
	jeq := func(jt, jf int) bpfInsn {
		return bpfInsn{code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, jt: jt, jf: jf}
	}
	long := append([]bpfInsn{jeq(0, 256)}, make([]bpfInsn, 256)...)
	for i := range long[1:] {
		long[1+i] = r
	}
	for _, tt := range []struct {
		name    string
		prog    []bpfInsn
		wantErr bool
	}{
		{"one return", []bpfInsn{r}, false},
		{"empty", nil, true},
		{"no final return", []bpfInsn{r, bpfLoad(0)}, true},
		{"jump past the end", []bpfInsn{jeq(1, 0), r}, true},
		{"jump onto the last", []bpfInsn{jeq(1, 0), r, r}, false},
		{"jump beyond 255", long, true},
		{"too long", make([]bpfInsn, unix.BPF_MAXINSNS+1), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := bpfAssemble(tt.prog)
			if got := err != nil; got != tt.wantErr {
				t.Errorf("got error %v, want error %v", err, tt.wantErr)
			}
		})
	}
}

// result turns what unix.Syscall returned into its errno, or nil.
func sysResult(_, _ uintptr, errno unix.Errno) error {
	if errno != 0 {
		return errno
	}
	return nil
}

// sysFdResult is result for a syscall that returns a descriptor, which it closes.
func sysFdResult(fd, _ uintptr, errno unix.Errno) error {
	if errno != 0 {
		return errno
	}
	unix.Close(int(fd))
	return nil
}

// TestSeccompInstall installs the filter for real in a subprocess, then
// makes the refused syscalls and runs ordinary programs.
func TestSeccompInstall(t *testing.T) {
	sandboxtest.Require(t, "seccomp")
	if !sandboxtest.RunInSubprocess(t) {
		return
	}

	// A thread that exists before the install must get the filter too
	// (TSYNC): two goroutines locked to their threads hold different ones.
	ready, start := make(chan int), make(chan struct{})
	otherErr := make(chan error)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		ready <- unix.Gettid()
		<-start
		otherErr <- unix.Unshare(unix.CLONE_NEWUSER)
	}()
	otherTid := <-ready

	runtime.LockOSThread() // no_new_privs is per thread: set it where the filter goes
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		t.Fatalf("prctl(PR_SET_NO_NEW_PRIVS): %v", err)
	}
	if err := installSeccomp(filterOptions{}); err != nil {
		t.Fatalf("installSeccomp: %v", err)
	}
	if tid := unix.Gettid(); tid == otherTid {
		t.Fatalf("other goroutine ran on this thread %d", tid)
	}
	close(start)
	if got, want := <-otherErr, unix.EPERM; !errors.Is(got, want) {
		t.Errorf("unshare(CLONE_NEWUSER) on a thread started before the install: got %v, want %v", got, want)
	}

	devNull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	null := devNull.Fd()
	var (
		b        byte
		ws       unix.Winsize
		fds      [2]int32
		ioParams [120]byte // struct io_uring_params
		policy   int32
		ts       unix.Timespec
	)
	src, dst, fstype := seccompCString("none"), seccompCString("/nonexistent-nanosandbox-test"), seccompCString("tmpfs")
	dir := t.TempDir() // under the filter, which refuses nothing TempDir needs
	plainPath := filepath.Join(dir, "plain")
	if err := os.WriteFile(plainPath, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	plainFile, err := os.Open(plainPath)
	if err != nil {
		t.Fatal(err)
	}
	defer plainFile.Close()
	plainFd := plainFile.Fd()
	plain, created, node := seccompCString(plainPath), seccompCString(filepath.Join(dir, "created")), seccompCString(filepath.Join(dir, "node"))
	fdcwd := unix.AT_FDCWD // a variable: a negative constant does not convert to uintptr
	atFDCWD := uintptr(fdcwd)

	// Pointers are converted in the unix.Syscall call expressions, where the
	// compiler keeps what they point to alive and in place. A comment gives
	// what the kernel would answer without the filter, where it differs.
	for _, tt := range []struct {
		name string
		err  error
		want error
	}{
		{"unshare CLONE_NEWUSER", unix.Unshare(unix.CLONE_NEWUSER), unix.EPERM}, // EINVAL: threaded
		{"unshare CLONE_NEWNET", unix.Unshare(unix.CLONE_NEWNET), unix.EPERM},   // root: nil
		{"unshare CLONE_FILES", unix.Unshare(unix.CLONE_FILES), nil},
		{"clone CLONE_NEWUSER", sysResult(unix.RawSyscall(unix.SYS_CLONE, unix.CLONE_NEWUSER|unix.CLONE_THREAD, 0, 0)), unix.EPERM}, // EINVAL
		{"clone3", sysResult(unix.Syscall(unix.SYS_CLONE3, 0, 0, 0)), unix.ENOSYS},                                                  // EINVAL
		{"socket AF_VSOCK", sysFdResult(unix.Syscall(unix.SYS_SOCKET, unix.AF_VSOCK, unix.SOCK_STREAM, 0)), unix.EAFNOSUPPORT},
		{"socket AF_PACKET", sysFdResult(unix.Syscall(unix.SYS_SOCKET, unix.AF_PACKET, unix.SOCK_RAW, 0)), unix.EAFNOSUPPORT}, // root: nil
		{"socket AF_ALG", sysFdResult(unix.Syscall(unix.SYS_SOCKET, unix.AF_ALG, unix.SOCK_SEQPACKET, 0)), unix.EAFNOSUPPORT},
		{"socketpair AF_VSOCK", sysResult(unix.Syscall6(unix.SYS_SOCKETPAIR, unix.AF_VSOCK, unix.SOCK_STREAM, 0, uintptr(unsafe.Pointer(&fds)), 0, 0)), unix.EAFNOSUPPORT},
		{"socket MPTCP", sysFdResult(unix.Syscall(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_MPTCP)), unix.EPROTONOSUPPORT},
		{"socket MPTCP inet6", sysFdResult(unix.Syscall(unix.SYS_SOCKET, unix.AF_INET6, unix.SOCK_STREAM, unix.IPPROTO_MPTCP)), unix.EPROTONOSUPPORT},
		{"socket AF_INET", sysFdResult(unix.Syscall(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, 0)), nil},
		{"socket AF_INET6", sysFdResult(unix.Syscall(unix.SYS_SOCKET, unix.AF_INET6, unix.SOCK_DGRAM, 0)), nil},
		{"socket AF_UNIX", sysFdResult(unix.Syscall(unix.SYS_SOCKET, unix.AF_UNIX, unix.SOCK_STREAM, 0)), nil},
		{"socket AF_NETLINK", sysFdResult(unix.Syscall(unix.SYS_SOCKET, unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE)), nil},
		{"ioctl TIOCSTI", sysResult(unix.Syscall(unix.SYS_IOCTL, null, unix.TIOCSTI, uintptr(unsafe.Pointer(&b)))), unix.EPERM},                // ENOTTY
		{"ioctl TIOCSTI high bit", sysResult(unix.Syscall(unix.SYS_IOCTL, null, unix.TIOCSTI|1<<32, uintptr(unsafe.Pointer(&b)))), unix.EPERM}, // ENOTTY
		{"ioctl TIOCLINUX", sysResult(unix.Syscall(unix.SYS_IOCTL, null, unix.TIOCLINUX, uintptr(unsafe.Pointer(&b)))), unix.EPERM},            // ENOTTY
		{"ioctl TIOCGWINSZ", sysResult(unix.Syscall(unix.SYS_IOCTL, null, unix.TIOCGWINSZ, uintptr(unsafe.Pointer(&ws)))), unix.ENOTTY},
		{"mount", sysResult(unix.Syscall6(unix.SYS_MOUNT, uintptr(unsafe.Pointer(src)), uintptr(unsafe.Pointer(dst)), uintptr(unsafe.Pointer(fstype)), 0, 0, 0)), unix.EPERM}, // ENOENT
		{"umount2", sysResult(unix.Syscall(unix.SYS_UMOUNT2, uintptr(unsafe.Pointer(dst)), 0, 0)), unix.EPERM},                                                                // ENOENT
		{"chroot", sysResult(unix.Syscall(unix.SYS_CHROOT, uintptr(unsafe.Pointer(dst)), 0, 0)), unix.EPERM},                                                                  // ENOENT
		{"fsopen", sysFdResult(unix.Syscall(unix.SYS_FSOPEN, uintptr(unsafe.Pointer(fstype)), 0, 0)), unix.EPERM},
		{"setns", sysResult(unix.Syscall(unix.SYS_SETNS, ^uintptr(0), 0, 0)), unix.EPERM}, // EBADF
		{"ptrace PTRACE_TRACEME", sysResult(unix.Syscall(unix.SYS_PTRACE, unix.PTRACE_TRACEME, 0, 0)), unix.EPERM},
		{"io_uring_setup", sysFdResult(unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&ioParams)), 0)), unix.EPERM},
		{"bpf", sysFdResult(unix.Syscall(unix.SYS_BPF, 0, 0, 0)), unix.EPERM},
		{"keyctl", sysResult(unix.Syscall(unix.SYS_KEYCTL, unix.KEYCTL_GET_KEYRING_ID, ^uintptr(2) /* KEY_SPEC_SESSION_KEYRING */, 0)), unix.EPERM},
		{"userfaultfd", sysFdResult(unix.Syscall(unix.SYS_USERFAULTFD, 0, 0, 0)), unix.EPERM},
		{"personality ADDR_NO_RANDOMIZE", sysResult(unix.Syscall(unix.SYS_PERSONALITY, addrNoRandomize, 0, 0)), unix.EPERM},
		{"personality query", sysResult(unix.Syscall(unix.SYS_PERSONALITY, 0xffffffff, 0, 0)), nil},
		{"fchmodat setuid", sysResult(unix.Syscall6(unix.SYS_FCHMODAT, atFDCWD, uintptr(unsafe.Pointer(plain)), 0o4755, 0, 0, 0)), unix.EPERM},
		{"fchmodat setgid", sysResult(unix.Syscall6(unix.SYS_FCHMODAT, atFDCWD, uintptr(unsafe.Pointer(plain)), 0o2755, 0, 0, 0)), unix.EPERM},
		{"fchmodat 0700", sysResult(unix.Syscall6(unix.SYS_FCHMODAT, atFDCWD, uintptr(unsafe.Pointer(plain)), 0o700, 0, 0, 0)), nil},
		{"fchmod setuid", sysResult(unix.Syscall(unix.SYS_FCHMOD, plainFd, 0o4755, 0)), unix.EPERM},
		{"fchmod 0600", sysResult(unix.Syscall(unix.SYS_FCHMOD, plainFd, 0o600, 0)), nil},
		{"openat O_CREAT setuid", sysFdResult(unix.Syscall6(unix.SYS_OPENAT, atFDCWD, uintptr(unsafe.Pointer(created)), unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o4755, 0, 0)), unix.EPERM},
		{"openat O_CREAT 0644", sysFdResult(unix.Syscall6(unix.SYS_OPENAT, atFDCWD, uintptr(unsafe.Pointer(created)), unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o644, 0, 0)), nil},
		{"openat no O_CREAT, mode ignored", sysFdResult(unix.Syscall6(unix.SYS_OPENAT, atFDCWD, uintptr(unsafe.Pointer(created)), unix.O_RDONLY|unix.O_CLOEXEC, 0o4755, 0, 0)), nil},
		{"mknodat setuid", sysResult(unix.Syscall6(unix.SYS_MKNODAT, atFDCWD, uintptr(unsafe.Pointer(node)), unix.S_IFREG|0o4755, 0, 0, 0)), unix.EPERM},
		{"openat2", sysFdResult(unix.Syscall(unix.SYS_OPENAT2, atFDCWD, uintptr(unsafe.Pointer(created)), 0)), unix.ENOSYS},
		{"fanotify_init", sysFdResult(unix.Syscall(unix.SYS_FANOTIFY_INIT, unix.FAN_CLASS_NOTIF|unix.FAN_REPORT_FID, unix.O_RDONLY, 0)), unix.EPERM},
		{"get_mempolicy", sysResult(unix.Syscall6(unix.SYS_GET_MEMPOLICY, uintptr(unsafe.Pointer(&policy)), 0, 0, 0, 0, 0)), unix.EPERM},
		{"set_mempolicy MPOL_DEFAULT", sysResult(unix.Syscall(unix.SYS_SET_MEMPOLICY, 0, 0, 0)), unix.EPERM},
		{"clock_settime CLOCK_MONOTONIC", sysResult(unix.Syscall(unix.SYS_CLOCK_SETTIME, unix.CLOCK_MONOTONIC, uintptr(unsafe.Pointer(&ts)), 0)), unix.EPERM}, // EINVAL
		{"above reviewed", sysResult(unix.Syscall(reviewedMaxSyscall+1, 0, 0, 0)), unix.ENOSYS},
		{"syscall -1", sysResult(unix.Syscall(^uintptr(0), 0, 0, 0)), unix.ENOSYS},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if !errors.Is(tt.err, tt.want) {
				t.Errorf("got %v, want %v", errnoName(tt.err), errnoName(tt.want))
			}
		})
	}

	t.Run("goroutines and sleep", func(t *testing.T) {
		var wg sync.WaitGroup
		for range 16 {
			wg.Go(func() {
				time.Sleep(10 * time.Millisecond)
				runtime.GC()
			})
		}
		wg.Wait()
	})
	t.Run("exec true", func(t *testing.T) {
		if err := exec.Command("/bin/true").Run(); err != nil {
			t.Errorf("got %v, want nil", err)
		}
	})
	t.Run("shell pipeline", func(t *testing.T) {
		out, err := exec.Command("/bin/sh", "-c", "echo hi | cat").Output()
		if err != nil || string(out) != "hi\n" {
			t.Errorf("got %q, %v, want %q, nil", out, err, "hi\n")
		}
	})
	t.Run("libc threads fall back from clone3", func(t *testing.T) {
		python, err := exec.LookPath("python3")
		if err != nil {
			t.Skip("needs python3 to start threads through libc")
		}
		out, err := exec.Command(python, "-c",
			"import threading; t = threading.Thread(target=print, args=('ok',)); t.start(); t.join()").CombinedOutput()
		if err != nil || string(out) != "ok\n" {
			t.Errorf("got %q, %v, want %q, nil", out, err, "ok\n")
		}
	})
	t.Run("unshare -U fails cleanly", func(t *testing.T) {
		unshare, err := exec.LookPath("unshare")
		if err != nil {
			t.Skip("needs util-linux unshare")
		}
		var stderr bytes.Buffer
		cmd := exec.Command(unshare, "-U", "true")
		cmd.Stderr = &stderr
		err = cmd.Run()
		if err == nil || !strings.Contains(stderr.String(), "Operation not permitted") {
			t.Errorf("got %v, %q, want an exit status and %q", err, stderr.String(), "Operation not permitted")
		}
	})
}

// amd64ELF returns a minimal static x86-64 ELF executable that runs code
// and then exit(0).
func amd64ELF(code []byte) []byte {
	const base, headers = 0x400000, 64 + 56
	code = append(code,
		0x31, 0xff, // xor edi, edi
		0xb8, 60, 0, 0, 0, // mov eax, 60 (exit)
		0x0f, 0x05, // syscall
	)
	le := binary.LittleEndian
	b := make([]byte, headers, headers+len(code))
	copy(b, "\x7fELF\x02\x01\x01")     // 64-bit, little-endian, version 1, System V
	le.PutUint16(b[16:], 2)            // e_type: ET_EXEC
	le.PutUint16(b[18:], 0x3e)         // e_machine: EM_X86_64
	le.PutUint32(b[20:], 1)            // e_version
	le.PutUint64(b[24:], base+headers) // e_entry: the code after the headers
	le.PutUint64(b[32:], 64)           // e_phoff
	le.PutUint16(b[52:], 64)           // e_ehsize
	le.PutUint16(b[54:], 56)           // e_phentsize
	le.PutUint16(b[56:], 1)            // e_phnum
	ph := b[64:]
	le.PutUint32(ph[0:], 1) // p_type: PT_LOAD
	le.PutUint32(ph[4:], 5) // p_flags: read, execute
	le.PutUint64(ph[16:], base)
	le.PutUint64(ph[24:], base)
	le.PutUint64(ph[32:], uint64(headers+len(code))) // p_filesz
	le.PutUint64(ph[40:], uint64(headers+len(code))) // p_memsz
	le.PutUint64(ph[48:], 0x1000)
	return append(b, code...)
}

// TestSeccompKillsForeignABI runs real i386 (int $0x80) and x32 syscalls
// under the filter: both must kill the process with SIGSYS.
func TestSeccompKillsForeignABI(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("needs amd64; the i386 and x32 ABIs exist there only")
	}
	sandboxtest.Require(t, "seccomp")
	dir := t.TempDir()
	programs := map[string]string{
		// i386 getpid (20) through the 32-bit entry, which runs from a
		// 64-bit process when the kernel has IA32 emulation.
		"i386": "\xb8\x14\x00\x00\x00\xcd\x80", // mov eax, 20; int $0x80
		// x32 getpid (39 | __X32_SYSCALL_BIT); without x32 support in the
		// kernel it just fails with ENOSYS.
		"x32": "\xb8\x27\x00\x00\x40\x0f\x05", // mov eax, 0x40000027; syscall
	}
	for name, code := range programs {
		if err := os.WriteFile(filepath.Join(dir, name), amd64ELF([]byte(code)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Without the filter each exits 0, or the machine cannot run it.
	if err := exec.Command(filepath.Join(dir, "x32")).Run(); err != nil {
		t.Fatalf("x32 program without the filter: %v", err)
	}
	if err := exec.Command(filepath.Join(dir, "i386")).Run(); err != nil {
		t.Skipf("needs IA32 emulation (int $0x80 from a 64-bit process): %v", err)
	}
	if !sandboxtest.RunInSubprocess(t) {
		return
	}

	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		t.Fatalf("prctl(PR_SET_NO_NEW_PRIVS): %v", err)
	}
	if err := installSeccomp(filterOptions{}); err != nil {
		t.Fatalf("installSeccomp: %v", err)
	}
	for _, name := range []string{"i386", "x32"} {
		t.Run(name, func(t *testing.T) {
			err := exec.Command(filepath.Join(dir, name)).Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != unix.SIGSYS {
				t.Errorf("got %v, want %v", err, "signal: bad system call")
			}
		})
	}
}

func seccompCString(s string) *byte {
	p, err := unix.BytePtrFromString(s)
	if err != nil {
		panic(err)
	}
	return p
}

func errnoName(err error) string {
	if err == nil {
		return "nil"
	}
	var errno unix.Errno
	if errors.As(err, &errno) {
		return unix.ErrnoName(errno)
	}
	return err.Error()
}
