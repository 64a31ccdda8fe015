// Command attack makes the system calls the escape suite attempts from
// inside the sandbox, ones a shell cannot make. Each subcommand prints "ok"
// and exits 0 when the call succeeded, or "denied: ERRNO" and exits 3 when
// it failed.
package main

import (
	"fmt"
	"net"
	"os"
	"strconv"
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
		var fd int
		fd, err = unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY, 0)
		if err != nil {
			break
		}
		req := uint64(unix.TIOCSTI)
		if os.Args[1] == "tiocsti-high" {
			req |= 1 << 32
		}
		c := byte('x')
		_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(unsafePointer(&c)))
		err = errnoErr(e)
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
	case "kill":
		pid, _ := strconv.Atoi(arg(1))
		err = unix.Kill(pid, syscall.Signal(0))
	default:
		fmt.Fprintf(os.Stderr, "attack: unknown subcommand %q\n", os.Args[1])
		os.Exit(1)
	}
	if err != nil {
		fmt.Printf("denied: %v\n", err)
		os.Exit(3)
	}
	fmt.Println("ok")
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
