//go:build linux

// Command attack makes the system calls the escape suite attempts from
// inside the sandbox, ones a shell cannot make. Each subcommand prints "ok"
// and exits 0 when the call succeeded, or "denied: ERRNO" and exits 3 when
// it failed; "setup: ERROR" and exits 4 when the attempt could not even be
// made.
package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: attack SUBCOMMAND [ARG...]")
		os.Exit(1)
	}
	arg := func(i int) string {
		if len(os.Args) <= i+1 {
			fmt.Fprintf(os.Stderr, "attack %s: missing argument %d\n", os.Args[1], i)
			os.Exit(1)
		}
		return os.Args[i+1]
	}
	var err error
	switch os.Args[1] {
	case "ptrace-attach":
		pid, _ := strconv.Atoi(arg(1))
		err = unix.PtraceAttach(pid)
	case "ptrace-traceme":
		_, _, e := unix.RawSyscall(unix.SYS_PTRACE, unix.PTRACE_TRACEME, 0, 0)
		err = errnoErr(e)
	case "tiocsti", "tiocsti-high":
		err = tiocsti(os.Args[1] == "tiocsti-high")
	case "mount-tmpfs":
		err = unix.Mount("tmpfs", arg(1), "tmpfs", 0, "")
	case "umount":
		err = unix.Unmount(arg(1), unix.MNT_DETACH)
	case "remount-rw":
		err = unix.Mount("", arg(1), "", unix.MS_REMOUNT|unix.MS_BIND, "")
	case "unshare-user":
		err = unix.Unshare(unix.CLONE_NEWUSER)
	case "unshare-net":
		err = unix.Unshare(unix.CLONE_NEWNET)
	case "unshare-mount":
		err = unix.Unshare(unix.CLONE_NEWNS)
	case "fsopen":
		var fd int
		fd, err = unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
		if err == nil {
			unix.Close(fd)
		}
	case "open-tree":
		var fd int
		fd, err = unix.OpenTree(unix.AT_FDCWD, arg(1), unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
		if err == nil {
			unix.Close(fd)
		}
	case "chroot":
		err = unix.Chroot(arg(1))
	case "int80":
		int80getpid() // killed by the filter, or returns
	case "tcp-connect":
		var c net.Conn
		c, err = net.DialTimeout("tcp", arg(1), 2*time.Second)
		if err == nil {
			c.Close()
		}
	case "unix-connect":
		var c net.Conn
		c, err = net.DialTimeout("unix", arg(1), 2*time.Second)
		if err == nil {
			c.Close()
		}
	case "abstract-connect":
		var c net.Conn
		c, err = net.DialTimeout("unix", "@"+arg(1), 2*time.Second)
		if err == nil {
			c.Close()
		}
	case "mptcp":
		err = socket(unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_MPTCP)
	case "vsock":
		err = socket(unix.AF_VSOCK, unix.SOCK_STREAM, 0)
	case "packet":
		err = socket(unix.AF_PACKET, unix.SOCK_RAW, 0)
	case "loopback":
		err = loopback()
	case "membomb":
		membomb()
	case "hold":
		mib, _ := strconv.Atoi(arg(2))
		err = hold(arg(1), mib)
	case "threads":
		n, _ := strconv.Atoi(arg(1))
		err = threads(n)
	case "reap-flood":
		n, _ := strconv.Atoi(arg(1))
		err = reapFlood(n)
	case "kill":
		pid, _ := strconv.Atoi(arg(1))
		err = unix.Kill(pid, syscall.Signal(0))
	case "setmode":
		mode, perr := strconv.ParseUint(arg(3), 0, 64)
		if perr != nil {
			fmt.Fprintf(os.Stderr, "attack setmode: mode %q: %v\n", arg(3), perr)
			os.Exit(1)
		}
		err = setMode(arg(1), arg(2), mode)
	case "syscall":
		err = syscallByName(arg(1))
	case "syscalls":
		fmt.Println(strings.Join(syscallNames(), " "))
		os.Exit(0)
	case "setcap":
		err = setFileCaps(arg(1))
	case "sigqueue":
		sig, _ := strconv.Atoi(arg(3))
		err = sigqueue(arg(1), arg(2), sig)
	case "setxattr-user":
		err = unix.Setxattr(arg(1), "user.nanosandbox-test", []byte("x"), 0)
	case "index-rename":
		if e := indexRename(arg(1), arg(2), arg(3)); e != nil {
			err = setupError{e}
		}
	case "index-stat":
		if e := indexStat(arg(1), arg(2)); e != nil {
			err = setupError{e}
		}
	case "index-splice":
		if e := indexSplice(arg(1), arg(2), arg(3)); e != nil {
			err = setupError{e}
		}
	default:
		fmt.Fprintf(os.Stderr, "attack: unknown subcommand %q\n", os.Args[1])
		os.Exit(1)
	}
	var se setupError
	if errors.As(err, &se) {
		fmt.Printf("setup: %v\n", err)
		os.Exit(4)
	}
	if err != nil {
		fmt.Printf("denied: %v\n", err)
		os.Exit(3)
	}
	fmt.Println("ok")
}

// setupError is a failure before the attempt itself: the attack could not be
// made, so it says nothing about the sandbox. It exits 4.
type setupError struct{ err error }

func (e setupError) Error() string { return e.err.Error() }

// tiocsti pushes a byte into the input of the process's own controlling
// terminal, the case the kernel allows without a filter (unless
// dev.tty.legacy_tiocsti is 0): a new session with a fresh pty as its
// controlling terminal. With high, a bit above the low 32 of the request
// is set, which the kernel ignores.
func tiocsti(high bool) error {
	master, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return setupError{fmt.Errorf("open /dev/ptmx: %w", err)}
	}
	if err := unix.IoctlSetPointerInt(master, unix.TIOCSPTLCK, 0); err != nil {
		return setupError{fmt.Errorf("unlockpt: %w", err)}
	}
	n, err := unix.IoctlGetUint32(master, unix.TIOCGPTN)
	if err != nil {
		return setupError{fmt.Errorf("ptsname: %w", err)}
	}
	if _, err := unix.Setsid(); err != nil {
		return setupError{fmt.Errorf("setsid: %w", err)}
	}
	slave, err := unix.Open(fmt.Sprintf("/dev/pts/%d", n), unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return setupError{fmt.Errorf("open pty: %w", err)}
	}
	if err := unix.IoctlSetInt(slave, unix.TIOCSCTTY, 0); err != nil {
		return setupError{fmt.Errorf("ioctl(TIOCSCTTY): %w", err)}
	}
	req := uint64(unix.TIOCSTI)
	if high {
		req |= 1 << 32
	}
	c := byte('x')
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(slave), uintptr(req), uintptr(unsafePointer(&c)))
	return errnoErr(e)
}

func errnoErr(e syscall.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

func socket(domain, typ, proto int) error {
	fd, err := unix.Socket(domain, typ, proto)
	if err == nil {
		unix.Close(fd)
	}
	return err
}

// loopback listens and connects on the sandbox's own loopback.
func loopback() error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err == nil {
			c.Write([]byte("pong"))
			c.Close()
		}
	}()
	c, err := net.DialTimeout("tcp", l.Addr().String(), 2*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	buf := make([]byte, 4)
	if _, err := c.Read(buf); err != nil {
		return err
	}
	if string(buf) != "pong" {
		return fmt.Errorf("got %q", buf)
	}
	return nil
}

// membomb allocates and touches memory until something stops it.
// kept holds what membomb allocates, so that none of it is freed.
var kept [][]byte

func membomb() {
	for {
		b := make([]byte, 8<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		kept = append(kept, b)
	}
}

// threads starts n OS threads that all live at once, as a Go or Node
// program with a big worker pool does.
func threads(n int) error {
	var wg sync.WaitGroup
	ready := make(chan struct{})
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread() // never unlocked: the thread stays this goroutine's
			<-ready
		}()
	}
	time.Sleep(200 * time.Millisecond)
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return err
	}
	close(ready)
	wg.Wait()
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			if got, _ := strconv.Atoi(strings.TrimSpace(v)); got < n {
				return fmt.Errorf("only %d threads of %d", got, n)
			}
			return nil
		}
	}
	return fmt.Errorf("no thread count")
}

// sigqueue sends sig to pid with a siginfo of its own (si_code SI_QUEUE,
// which the kernel lets any sender choose), by how: rt_sigqueueinfo,
// rt_tgsigqueueinfo (to the thread pid of the process pid), or
// pidfd_send_signal through a pidfd of pid (pidfd_open, or /proc/PID).
func sigqueue(how, pidArg string, sig int) error {
	pid, _ := strconv.Atoi(pidArg)
	var info [128]byte // siginfo_t: signo, errno, code, then the sender
	binary.LittleEndian.PutUint32(info[0:], uint32(sig))
	binary.LittleEndian.PutUint32(info[8:], uint32(0xffffffff)) // SI_QUEUE, -1
	binary.LittleEndian.PutUint32(info[16:], uint32(os.Getpid()))
	binary.LittleEndian.PutUint32(info[20:], uint32(os.Getuid()))
	p := uintptr(unsafePointer(&info[0]))
	var errno syscall.Errno
	switch how {
	case "rt_sigqueueinfo":
		_, _, errno = unix.Syscall(unix.SYS_RT_SIGQUEUEINFO, uintptr(pid), uintptr(sig), p)
	case "rt_tgsigqueueinfo":
		_, _, errno = unix.Syscall6(unix.SYS_RT_TGSIGQUEUEINFO, uintptr(pid), uintptr(pid), uintptr(sig), p, 0, 0)
	case "pidfd", "procfd":
		fd, err := unix.PidfdOpen(pid, 0)
		if how == "procfd" {
			fd, err = unix.Open("/proc/"+pidArg, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		}
		if err != nil {
			return setupError{fmt.Errorf("%s of %d: %w", how, pid, err)}
		}
		defer unix.Close(fd)
		_, _, errno = unix.Syscall6(unix.SYS_PIDFD_SEND_SIGNAL, uintptr(fd), uintptr(sig), p, 0, 0, 0)
	default:
		return setupError{fmt.Errorf("sigqueue: unknown way %q", how)}
	}
	runtime.KeepAlive(&info)
	if errno != 0 {
		return errno
	}
	return nil
}
