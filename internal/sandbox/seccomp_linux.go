package sandbox

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The seccomp filter is the command's last layer (DESIGN.md §3): default
// allow, plus a deny list for what namespaces, Landlock and the missing
// capabilities leave reachable, and for kernel interfaces that widen the
// attack surface without a use inside the sandbox. It is assembled by hand,
// because a general deny-list library let a 32-bit `int $0x80` ptrace and a
// TIOCSTI with a high bit set through.
//
// In order, for every syscall:
//
//   - a foreign calling convention (seccomp_data.arch other than the native
//     one: i386 through `int $0x80` on amd64, AArch32 on arm64) kills the
//     process; on amd64 so does the x32 bit in the syscall number. The deny
//     list below is written in the native numbering, so any other numbering
//     would slip past it;
//   - a number above the last one reviewed (seccompArch.maxSyscall, compared
//     unsigned, so negative ones too) fails with ENOSYS: a syscall added by a
//     later kernel is refused until someone reads what it does. clone3 fails with ENOSYS too, because its flags sit
//     in a struct in memory that seccomp cannot read; libc then falls back to
//     clone, whose flags it can;
//   - clone and unshare with a namespace flag, and the syscalls of
//     seccompArch.denied (setns, ptrace, the mount API, ...), fail with EPERM,
//     which programs report as "Operation not permitted";
//   - ioctl TIOCSTI (push input into a terminal) and TIOCLINUX fail with
//     EPERM; personality other than the default persona or a query fails
//     with EPERM;
//   - a mode with the setuid or setgid bit fails with EPERM, whoever the
//     caller and whatever the file, in every call that sets one (the model
//     is systemd's RestrictSUIDSGID=): chmod, fchmod, fchmodat, fchmodat2,
//     mkdir, mkdirat, mknod, mknodat, creat, and open and openat when their
//     flags create a file (O_CREAT, O_TMPFILE). The sandbox's mounts are
//     nosuid, but the host's are not: a setuid file left in the workspace
//     would run with its owner's rights for whoever later runs it there
//     (root's, when the server runs as root). cp -p, tar x and install -m
//     of such a file fail to set the bits; git's core.sharedRepository,
//     which sets the setgid bit on directories, fails too. A directory
//     still inherits the setgid bit of its parent from the kernel: it only
//     passes on a group the caller already has. File capabilities need
//     CAP_SETFCAP, which the command lacks;
//   - openat2 fails with ENOSYS: its mode and flags sit in a struct in
//     memory that seccomp cannot read. Programs fall back to openat, as on
//     a kernel before 5.6 (Go's and glibc's own opens never use it);
//   - socket and socketpair in a family other than unix, inet, inet6 and
//     netlink fail with EAFNOSUPPORT, as on a kernel built without that
//     family (vsock, packet, alg, bluetooth...); inet and inet6 with
//     IPPROTO_MPTCP fail with EPROTONOSUPPORT, as on a kernel without MPTCP
//     (Landlock's TCP rules do not see MPTCP, and Go 1.24+ falls back to TCP).
//
// Without namespaces (filterOptions), the filter also holds what they did:
// inet, inet6 and netlink sockets fail with EAFNOSUPPORT when the network
// is off; below Landlock ABI 9, socket(AF_UNIX) fails with EAFNOSUPPORT and
// socketpair makes only stream and seqpacket pairs (a datagram pair could
// send to any named socket); below Landlock ABI 3, truncate(2) fails with
// EPERM.
//
// Everything else is allowed, including what the Go runtime needs between
// the install and execve: futex, mmap, rt_sig*, clone for threads. The deny
// list was compared with Docker's default profile; what Docker refuses and
// this filter allows is listed with its reason in seccomp_denied.go.

// The filter reads struct seccomp_data (include/uapi/linux/seccomp.h):
//
//	struct seccomp_data {
//		int   nr;                  // offset 0: syscall number, in arch's numbering
//		__u32 arch;                // offset 4: AUDIT_ARCH_* of the calling convention
//		__u64 instruction_pointer; // offset 8
//		__u64 args[6];             // offset 16 + 8*i
//	};
//
// Classic BPF loads 32-bit words. amd64 and arm64 are little-endian, and the
// arch check admits only their little-endian AUDIT_ARCH values, so the low
// half of args[i] is the word at 16+8*i. Only low halves are compared: every
// argument inspected here is an int or unsigned int in the kernel (ioctl's
// request, socket's family and protocol, personality's persona) or is
// truncated to 32 bits by it (clone's flags; unshare's namespace flags are
// all in the low half), so high bits cannot change what the kernel does, and
// a request with high bits set is caught like one without. A mode is a
// umode_t, 16 bits, in the kernel, and open's flags an int.
const (
	seccompDataNr   = 0
	seccompDataArch = 4
	seccompDataArgs = 16
)

// seccompArgLow is the offset in seccomp_data of the low half of argument i.
func seccompArgLow(i int) uint32 { return seccompDataArgs + 8*uint32(i) }

// seccompArch is what the filter needs to know about one architecture: its
// calling convention and syscall numbers, reviewed against the table of
// golang.org/x/sys v0.50.0 for it.
type seccompArch struct {
	auditArch  uint32 // seccomp_data.arch of a native syscall
	x32        bool   // whether numbers with __X32_SYSCALL_BIT select the x32 ABI (amd64)
	maxSyscall uint32 // the last number reviewed; every one above fails with ENOSYS

	// Syscalls whose arguments are inspected. clone's flags are its first
	// argument on both amd64 and arm64 (CLONE_BACKWARDS only swaps tls and
	// child_tid; s390's CLONE_BACKWARDS2 would move them, but it has no table).
	clone, clone3, unshare, ioctl, personality, socket, socketpair uint32

	// openat2 fails with ENOSYS: seccomp cannot read its struct open_how.
	openat2 uint32

	// truncate fails with EPERM when filterOptions.NoTruncate says so.
	truncate uint32

	// Signals with a sender's own siginfo: rt_sigqueueinfo and
	// rt_tgsigqueueinfo fail with EPERM aimed at pid 1, and
	// pidfd_send_signal with a siginfo at all (see program).
	sigqueueinfo, tgsigqueueinfo, pidfdSendSignal uint32

	// denied fail with EPERM whatever their arguments.
	denied []uint32

	// modes are the syscalls that set a file mode, checked for the setuid
	// and setgid bits.
	modes []modeCall
}

// modeCall is a syscall whose argument mode sets a file's mode: always, or,
// for an open, only when its argument flags creates a file.
type modeCall struct {
	nr    uint32
	mode  int // the mode argument
	flags int // the flags argument of an open; -1 for a call that always sets the mode
}

// nativeSeccomp is set by seccomp_amd64.go or seccomp_arm64.go. It is nil on
// an architecture whose syscall table nobody reviewed: seccompProgram refuses
// it rather than install a filter written for other numbers.
var nativeSeccomp *seccompArch

const (
	// x32SyscallBit is __X32_SYSCALL_BIT: on amd64 it selects the x32 ABI,
	// whose numbers the deny list does not name.
	x32SyscallBit = 0x40000000

	// noSyscall is the number -1, which the kernel answers with ENOSYS on
	// every ABI. It has the x32 bit set but is not an x32 call, so it gets
	// ENOSYS rather than a kill.
	noSyscall = 0xffffffff

	// personaQuery is personality(0xffffffff), which only reads the persona.
	personaQuery = 0xffffffff

	// cloneNamespaces are the namespace flags clone takes. CLONE_NEWTIME
	// (0x80) is not one of them: in clone's flags that bit belongs to
	// CSIGNAL, the exit signal, so clone cannot make a time namespace.
	cloneNamespaces = unix.CLONE_NEWNS | unix.CLONE_NEWUSER | unix.CLONE_NEWPID |
		unix.CLONE_NEWNET | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP

	// unshareNamespaces are the namespace flags unshare takes.
	unshareNamespaces = cloneNamespaces | unix.CLONE_NEWTIME

	// setuidBits are the mode bits refused: S_ISUID and S_ISGID.
	setuidBits = unix.S_ISUID | unix.S_ISGID

	// creatingFlags are the open flags with which the mode argument counts:
	// O_CREAT, and __O_TMPFILE (O_TMPFILE is __O_TMPFILE|O_DIRECTORY, and
	// O_DIRECTORY differs between amd64 and arm64; the kernel refuses
	// __O_TMPFILE without O_DIRECTORY anyway).
	creatingFlags = unix.O_CREAT | unix.O_TMPFILE&^unix.O_DIRECTORY
)

// filterOptions are what the filter holds beyond the deny list, where the
// command runs without the sandbox's namespaces (--without-namespaces). The
// zero value is the filter of the full sandbox.
type filterOptions struct {
	// NoNetwork refuses inet, inet6 and netlink sockets: without a network
	// namespace of its own, a command would reach the host's network.
	NoNetwork bool `json:"no_network,omitempty"`
	// NoUnixSocket refuses socket(AF_UNIX), and socketpair but for stream
	// and seqpacket pairs: below Landlock ABI 9, nothing else keeps a
	// command from the host's named unix sockets (an agent's, docker's,
	// tmux's, the session bus), and without a network namespace from its
	// abstract ones below ABI 6. A datagram pair could send to any named
	// socket (sendto with an address); a stream or seqpacket one cannot.
	NoUnixSocket bool `json:"no_unix_socket,omitempty"`
	// NoTruncate refuses truncate(2): below Landlock ABI 3 nothing else
	// keeps a command from truncating, by its name, a file of the caller's
	// outside the writable paths. (open with O_TRUNC needs the right to
	// write, which Landlock checks at every ABI.)
	NoTruncate bool `json:"no_truncate,omitempty"`
}

// seccompProgram returns the classic BPF program of the command's syscall
// filter for the running architecture (runtime.GOARCH: amd64 or arm64), with
// what o adds. Pure: no syscalls.
func seccompProgram(o filterOptions) ([]unix.SockFilter, error) {
	if nativeSeccomp == nil {
		return nil, fmt.Errorf("seccomp: no reviewed syscall table for linux/%s: %w", runtime.GOARCH, ErrUnsupported)
	}
	return bpfAssemble(nativeSeccomp.program(o))
}

// installSeccomp installs that filter with SECCOMP_FILTER_FLAG_TSYNC, so it
// holds on every thread of the process. The caller has already set
// no_new_privs on the calling thread (TSYNC sets it on the others); it is the
// last thing done before execve, on a goroutine locked to its OS thread.
func installSeccomp(o filterOptions) error {
	prog, err := seccompProgram(o)
	if err != nil {
		return err
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	r, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	if errno != 0 {
		return fmt.Errorf("seccomp(SECCOMP_SET_MODE_FILTER): %w", errno)
	}
	if r != 0 {
		// With TSYNC, a positive result is the id of a thread that could
		// not take the filter (it has one of its own); nothing was installed.
		return fmt.Errorf("seccomp(SECCOMP_SET_MODE_FILTER): thread %d cannot take the filter (SECCOMP_FILTER_FLAG_TSYNC)", r)
	}
	return nil
}

// program lays the filter out as described at the top of this file.
func (a *seccompArch) program(o filterOptions) []bpfInsn {
	p := []bpfInsn{
		bpfLoad(seccompDataArch),
		{code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, k: a.auditArch, jt: 1},
		bpfRet(unix.SECCOMP_RET_KILL_PROCESS),
		bpfLoad(seccompDataNr),
	}
	if a.x32 {
		// -1 jumps past the x32 check to the range check, which refuses it.
		p = append(p,
			bpfInsn{code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, k: noSyscall, jt: 2},
			bpfInsn{code: unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K, k: x32SyscallBit, jf: 1},
			bpfRet(unix.SECCOMP_RET_KILL_PROCESS))
	}
	p = append(p, bpfInsn{code: unix.BPF_JMP | unix.BPF_JGT | unix.BPF_K, k: a.maxSyscall, jf: 1})
	p = append(p, bpfErrno(unix.ENOSYS)...)
	p = append(p, bpfOnSyscall(a.clone3, bpfErrno(unix.ENOSYS))...)
	for _, nr := range a.denied {
		p = append(p, bpfOnSyscall(nr, bpfErrno(unix.EPERM))...)
	}
	p = append(p, bpfOnSyscall(a.openat2, bpfErrno(unix.ENOSYS))...)
	for _, m := range a.modes {
		check := bpfArgAnyBit(m.mode, setuidBits, bpfErrno(unix.EPERM), bpfAllow())
		if m.flags >= 0 {
			check = bpfArgAnyBit(m.flags, creatingFlags, check, bpfAllow())
		}
		p = append(p, bpfOnSyscall(m.nr, check)...)
	}
	p = append(p, bpfOnSyscall(a.clone,
		bpfArgAnyBit(0, cloneNamespaces, bpfErrno(unix.EPERM), bpfAllow()))...)
	p = append(p, bpfOnSyscall(a.unshare,
		bpfArgAnyBit(0, unshareNamespaces, bpfErrno(unix.EPERM), bpfAllow()))...)
	p = append(p, bpfOnSyscall(a.ioctl,
		bpfArgIn(1, []uint32{unix.TIOCSTI, unix.TIOCLINUX}, bpfErrno(unix.EPERM), bpfAllow()))...)
	p = append(p, bpfOnSyscall(a.personality,
		bpfArgIn(0, []uint32{0, personaQuery}, bpfAllow(), bpfErrno(unix.EPERM)))...)
	p = append(p, bpfOnSyscall(a.socket, seccompSocketFamilies(o, o.NoUnixSocket))...)
	pairs := seccompSocketFamilies(o, false)
	if o.NoUnixSocket {
		// socketpair makes unix pairs only; their type (argument 1, with
		// SOCK_NONBLOCK and SOCK_CLOEXEC above SOCK_TYPE_MASK) must be
		// stream or seqpacket.
		stream := append([]bpfInsn{
			bpfLoad(seccompArgLow(1)),
			{code: unix.BPF_ALU | unix.BPF_AND | unix.BPF_K, k: sockTypeMask},
		}, bpfIn([]uint32{unix.SOCK_STREAM, unix.SOCK_SEQPACKET}, bpfAllow(), bpfErrno(unix.EAFNOSUPPORT))...)
		pairs = bpfArgIn(0, []uint32{unix.AF_UNIX}, stream, pairs)
	}
	p = append(p, bpfOnSyscall(a.socketpair, pairs)...)
	if o.NoTruncate {
		p = append(p, bpfOnSyscall(a.truncate, bpfErrno(unix.EPERM))...)
	}
	// Pid 1 is the sandbox's helper, the command's own host uid, which it
	// may signal where Landlock cannot scope signals (below ABI 6). The Go
	// helper drops what kill sends (ignoreSignals), but the Go runtime
	// takes a SIGSEGV or SIGBUS whose siginfo says a process queued it
	// for a fault, and dies. The calls that let a sender choose its
	// siginfo, aimed at the helper, fail: by pid (the first argument, an
	// int), or for pidfd_send_signal, whose pidfd may be /proc/1, with any
	// siginfo (argument 2, a pointer: both halves); without one it sends
	// what kill does.
	p = append(p, bpfOnSyscall(a.sigqueueinfo, bpfArgIn(0, []uint32{1}, bpfErrno(unix.EPERM), bpfAllow()))...)
	p = append(p, bpfOnSyscall(a.tgsigqueueinfo, bpfArgIn(0, []uint32{1}, bpfErrno(unix.EPERM), bpfAllow()))...)
	p = append(p, bpfOnSyscall(a.pidfdSendSignal, append([]bpfInsn{bpfLoad(seccompArgLow(2))},
		bpfIn([]uint32{0}, append([]bpfInsn{bpfLoad(seccompArgLow(2) + 4)},
			bpfIn([]uint32{0}, bpfAllow(), bpfErrno(unix.EPERM))...), bpfErrno(unix.EPERM))...))...)
	return append(p, bpfAllow()...)
}

// sockTypeMask is SOCK_TYPE_MASK: the bits of a socket type below its
// flags.
const sockTypeMask = 0xf

// seccompSocketFamilies checks socket's or socketpair's family (argument 0)
// and, for inet and inet6, protocol (argument 2): o.NoNetwork refuses inet,
// inet6 and netlink, and noUnix unix.
func seccompSocketFamilies(o filterOptions, noUnix bool) []bpfInsn {
	refuse := bpfErrno(unix.EAFNOSUPPORT)
	var direct []uint32
	if !noUnix {
		direct = append(direct, unix.AF_UNIX)
	}
	rest := refuse
	if !o.NoNetwork {
		direct = append(direct, unix.AF_NETLINK)
		inet := bpfArgIn(2, []uint32{unix.IPPROTO_MPTCP}, bpfErrno(unix.EPROTONOSUPPORT), bpfAllow())
		rest = bpfArgIn(0, []uint32{unix.AF_INET, unix.AF_INET6}, inet, refuse)
	}
	if len(direct) == 0 {
		return rest
	}
	return bpfArgIn(0, direct, bpfAllow(), rest)
}

// bpfInsn is a classic BPF instruction whose jump offsets are not yet bounded
// to the 8 bits of unix.SockFilter; bpfAssemble checks them.
type bpfInsn struct {
	code   uint16
	jt, jf int // instructions skipped when the condition holds, or not
	k      uint32
}

// The helpers below build fragments that never fall off their end: each ends
// every path in a return. So a fragment guarded by bpfOnSyscall can be skipped
// with the syscall number still in the accumulator, and fragments chain
// without labels: every jump is forward, by the length of what it skips.

func bpfLoad(off uint32) bpfInsn {
	return bpfInsn{code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, k: off}
}

func bpfRet(action uint32) bpfInsn {
	return bpfInsn{code: unix.BPF_RET | unix.BPF_K, k: action}
}

func bpfErrno(errno unix.Errno) []bpfInsn {
	return []bpfInsn{bpfRet(unix.SECCOMP_RET_ERRNO | uint32(errno)&unix.SECCOMP_RET_DATA)}
}

func bpfAllow() []bpfInsn { return []bpfInsn{bpfRet(unix.SECCOMP_RET_ALLOW)} }

// bpfOnSyscall runs body when the accumulator, holding the syscall number, is
// nr, and skips it otherwise.
func bpfOnSyscall(nr uint32, body []bpfInsn) []bpfInsn {
	p := []bpfInsn{{code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, k: nr, jf: len(body)}}
	return append(p, body...)
}

// bpfArgIn loads the low half of argument i: then runs when it is one of values,
// otherwise when not.
func bpfArgIn(i int, values []uint32, then, otherwise []bpfInsn) []bpfInsn {
	return append([]bpfInsn{bpfLoad(seccompArgLow(i))}, bpfIn(values, then, otherwise)...)
}

// bpfIn runs then when the accumulator is one of values, otherwise when
// not.
func bpfIn(values []uint32, then, otherwise []bpfInsn) []bpfInsn {
	var p []bpfInsn
	for j, v := range values {
		// A match skips the values left and otherwise; a mismatch tries the
		// next value, and the last falls into otherwise.
		p = append(p, bpfInsn{code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, k: v, jt: len(values) - 1 - j + len(otherwise)})
	}
	return append(append(p, otherwise...), then...)
}

// bpfArgAnyBit loads the low half of argument i: then runs when it has any bit
// of mask set, otherwise when not.
func bpfArgAnyBit(i int, mask uint32, then, otherwise []bpfInsn) []bpfInsn {
	p := []bpfInsn{bpfLoad(seccompArgLow(i)), {code: unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K, k: mask, jt: len(otherwise)}}
	return append(append(p, otherwise...), then...)
}

// bpfAssemble checks the program the kernel would refuse, or that would not do
// what its layout says, and converts it: at most BPF_MAXINSNS instructions,
// every jump forward within 255 and inside the program, the last a return.
func bpfAssemble(p []bpfInsn) ([]unix.SockFilter, error) {
	if len(p) == 0 || len(p) > unix.BPF_MAXINSNS {
		return nil, fmt.Errorf("seccomp filter: %d instructions, want 1 to %d", len(p), unix.BPF_MAXINSNS)
	}
	if last := p[len(p)-1]; last.code != unix.BPF_RET|unix.BPF_K {
		return nil, fmt.Errorf("seccomp filter: last instruction %#x is not a return", last.code)
	}
	out := make([]unix.SockFilter, len(p))
	for i, in := range p {
		if in.code&0x07 == unix.BPF_JMP { // BPF_CLASS
			for _, j := range []int{in.jt, in.jf} {
				if j < 0 || j > 0xff || i+1+j >= len(p) {
					return nil, fmt.Errorf("seccomp filter: instruction %d jumps %d, outside the program or beyond 255", i, j)
				}
			}
		} else if in.jt != 0 || in.jf != 0 {
			return nil, fmt.Errorf("seccomp filter: instruction %d is no jump but has jump offsets", i)
		}
		out[i] = unix.SockFilter{Code: in.code, Jt: uint8(in.jt), Jf: uint8(in.jf), K: in.k}
	}
	return out, nil
}
