package main

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// hold keeps mib MiB of the given kind of memory, touched, then returns:
// nil when it holds all of it, else what refused more.
//
//	private      an anonymous private mapping (what RLIMIT_DATA counts)
//	shared       an anonymous shared mapping
//	memfd-map    a memfd, mapped shared
//	memfd-write  a memfd, written
//	sysv-shm     a SysV shared memory segment, attached
//	socket       data queued in unix socket pairs
//	pipe         data queued in pipes
func hold(kind string, mib int) error {
	size := mib << 20
	mapped := func(fd, flags int) error {
		b, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, flags)
		if err != nil {
			return fmt.Errorf("mmap: %w", err)
		}
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		return nil
	}
	memfd := func() (int, error) {
		fd, err := unix.MemfdCreate("hold", 0)
		if err != nil {
			return -1, setupError{fmt.Errorf("memfd_create: %w", err)}
		}
		return fd, nil
	}
	switch kind {
	case "private":
		return mapped(-1, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	case "shared":
		return mapped(-1, unix.MAP_SHARED|unix.MAP_ANONYMOUS)
	case "memfd-map":
		fd, err := memfd()
		if err != nil {
			return err
		}
		if err := unix.Ftruncate(fd, int64(size)); err != nil {
			return fmt.Errorf("ftruncate: %w", err)
		}
		return mapped(fd, unix.MAP_SHARED)
	case "memfd-write":
		fd, err := memfd()
		if err != nil {
			return err
		}
		chunk := make([]byte, 1<<20)
		for i := range chunk {
			chunk[i] = 1
		}
		for range mib {
			if _, err := unix.Write(fd, chunk); err != nil {
				return fmt.Errorf("write: %w", err)
			}
		}
		return nil
	case "sysv-shm":
		id, err := unix.SysvShmGet(unix.IPC_PRIVATE, size, unix.IPC_CREAT|0o600)
		if err != nil {
			return fmt.Errorf("shmget: %w", err)
		}
		b, err := unix.SysvShmAttach(id, 0, 0)
		if err != nil {
			return fmt.Errorf("shmat: %w", err)
		}
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		return nil
	case "socket", "pipe":
		return queue(kind, size)
	}
	return setupError{fmt.Errorf("hold: unknown kind %q", kind)}
}

// queue keeps size bytes written, unread, in unix socket pairs or pipes,
// each filled until it takes no more.
func queue(kind string, size int) error {
	chunk := make([]byte, 64<<10)
	total := 0
	for total < size {
		var fds [2]int
		var err error
		if kind == "socket" {
			var p [2]int
			p, err = unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
			fds = [2]int{p[1], p[0]}
			if err == nil {
				// As large as an unprivileged process may ask (net.core.wmem_max).
				unix.SetsockoptInt(fds[1], unix.SOL_SOCKET, unix.SO_SNDBUF, 64<<20)
			}
		} else {
			err = unix.Pipe2(fds[:], 0)
			if err == nil {
				unix.FcntlInt(uintptr(fds[1]), unix.F_SETPIPE_SZ, 1<<20) // pipe-max-size; may be refused
			}
		}
		if err != nil {
			return fmt.Errorf("%s after %d MiB: %w", kind, total>>20, err)
		}
		if err := unix.SetNonblock(fds[1], true); err != nil {
			return setupError{err}
		}
		for total < size {
			n, err := unix.Write(fds[1], chunk[:min(len(chunk), size-total)])
			if err != nil {
				break // full
			}
			total += n
		}
	}
	return nil
}
