//go:build linux

package main

import (
	"fmt"
	"sort"
	"unsafe"

	"golang.org/x/sys/unix"
)

// syscalls are system calls the sandbox refuses though the kernel lets an
// unprivileged process make them, each with arguments that succeed, or fail
// otherwise than with EPERM, outside the sandbox, and change nothing on the
// machine (archSyscalls adds the architecture's own).
var syscalls = map[string]func() error{
	"fanotify_init": func() error {
		return fdResult(unix.Syscall(unix.SYS_FANOTIFY_INIT, unix.FAN_CLASS_NOTIF|unix.FAN_REPORT_FID, unix.O_RDONLY, 0))
	},
	"memfd_secret": func() error { return fdResult(unix.Syscall(unix.SYS_MEMFD_SECRET, 0, 0, 0)) },
	"get_mempolicy": func() error {
		var mode int32
		return result(unix.Syscall6(unix.SYS_GET_MEMPOLICY, uintptr(unsafe.Pointer(&mode)), 0, 0, 0, 0, 0))
	},
	"set_mempolicy": func() error { return result(unix.Syscall(unix.SYS_SET_MEMPOLICY, 0 /* MPOL_DEFAULT */, 0, 0)) },
	"mbind": func() error {
		return withPage(func(b []byte) error {
			return result(unix.Syscall6(unix.SYS_MBIND, uintptr(unsafe.Pointer(&b[0])), 4096, 0 /* MPOL_DEFAULT */, 0, 0, 0))
		})
	},
	"set_mempolicy_home_node": func() error {
		return withPage(func(b []byte) error {
			return result(unix.Syscall6(unix.SYS_SET_MEMPOLICY_HOME_NODE, uintptr(unsafe.Pointer(&b[0])), 4096, 0, 0, 0, 0))
		})
	},
	"migrate_pages": func() error {
		mask := uint64(1) // node 0, to node 0
		return result(unix.Syscall6(unix.SYS_MIGRATE_PAGES, 0, 64, uintptr(unsafe.Pointer(&mask)), uintptr(unsafe.Pointer(&mask)), 0, 0))
	},
	"move_pages": func() error {
		return withPage(func(b []byte) error {
			pages := [1]*byte{&b[0]}
			var status int32 // a query: where the page is
			return result(unix.Syscall6(unix.SYS_MOVE_PAGES, 0, 1, uintptr(unsafe.Pointer(&pages[0])), 0, uintptr(unsafe.Pointer(&status)), 0))
		})
	},
	"process_madvise": func() error {
		pidfd, err := unix.PidfdOpen(unix.Getpid(), 0)
		if err != nil {
			return setupError{fmt.Errorf("pidfd_open: %w", err)}
		}
		defer unix.Close(pidfd)
		return withPage(func(b []byte) error {
			iov := unix.Iovec{Base: &b[0], Len: 4096}
			return result(unix.Syscall6(unix.SYS_PROCESS_MADVISE, uintptr(pidfd), uintptr(unsafe.Pointer(&iov)), 1, unix.MADV_COLD, 0, 0))
		})
	},
	// SYSLOG_ACTION_SIZE_BUFFER reads the log's size only.
	"syslog": func() error { return result(unix.Syscall(unix.SYS_SYSLOG, 10, 0, 0)) },
	// CLOCK_MONOTONIC cannot be set: EINVAL, before any capability check.
	"clock_settime": func() error {
		var ts unix.Timespec
		return result(unix.Syscall(unix.SYS_CLOCK_SETTIME, unix.CLOCK_MONOTONIC, uintptr(unsafe.Pointer(&ts)), 0))
	},
	// A time with 2 million microseconds: EINVAL, before any capability check.
	"settimeofday": func() error {
		tv := unix.Timeval{Usec: 2_000_000}
		return result(unix.Syscall(unix.SYS_SETTIMEOFDAY, uintptr(unsafe.Pointer(&tv)), 0, 0))
	},
	// A name longer than the kernel takes: EINVAL for whoever may set it.
	"sethostname": func() error {
		b := make([]byte, 4096)
		return result(unix.Syscall(unix.SYS_SETHOSTNAME, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), 0))
	},
	"setdomainname": func() error {
		b := make([]byte, 4096)
		return result(unix.Syscall(unix.SYS_SETDOMAINNAME, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), 0))
	},
	// LSM_ATTR_CURRENT with no context: EINVAL.
	"lsm_set_self_attr": func() error { return result(unix.Syscall6(unix.SYS_LSM_SET_SELF_ATTR, 100, 0, 0, 0, 0, 0)) },
}

// syscallNames lists syscalls and archSyscalls, sorted.
func syscallNames() []string {
	var names []string
	for n := range syscalls {
		names = append(names, n)
	}
	for n := range archSyscalls {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// syscallByName makes the named syscall.
func syscallByName(name string) error {
	if f, ok := syscalls[name]; ok {
		return f()
	}
	if f, ok := archSyscalls[name]; ok {
		return f()
	}
	return setupError{fmt.Errorf("no system call %q on this architecture (have %v)", name, syscallNames())}
}

func result(_, _ uintptr, e unix.Errno) error { return errnoErr(e) }

func fdResult(fd, _ uintptr, e unix.Errno) error {
	if e == 0 {
		unix.Close(int(fd))
	}
	return errnoErr(e)
}

// withPage runs f on a fresh private anonymous page.
func withPage(f func(b []byte) error) error {
	b, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return setupError{fmt.Errorf("mmap: %w", err)}
	}
	defer unix.Munmap(b)
	b[0] = 1
	return f(b)
}
