package main

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// legacyCalls are the amd64 system calls that arm64 lacks, which set a
// mode; setMode makes them by name.
var legacyCalls = map[string]uintptr{
	"chmod": unix.SYS_CHMOD,
	"open":  unix.SYS_OPEN,
	"creat": unix.SYS_CREAT,
	"mkdir": unix.SYS_MKDIR,
	"mknod": unix.SYS_MKNOD,
}

// archSyscalls are amd64's own refused system calls; see syscalls.
var archSyscalls = map[string]func() error{
	// Reads the LDT: 0 bytes, or its size.
	"modify_ldt": func() error {
		var buf [16]byte
		return result(unix.Syscall(unix.SYS_MODIFY_LDT, 0, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf))))
	},
	// Level 0 from level 0, and port 0x80 turned off: neither needs a capability.
	"iopl":   func() error { return result(unix.Syscall(unix.SYS_IOPL, 0, 0, 0)) },
	"ioperm": func() error { return result(unix.Syscall(unix.SYS_IOPERM, 0x80, 1, 0)) },
	"sysfs":  func() error { return result(unix.Syscall(unix.SYS_SYSFS, 3, 0, 0)) }, // how many filesystem types
	"ustat": func() error {
		var st unix.Stat_t
		if err := unix.Stat("/", &st); err != nil {
			return setupError{err}
		}
		var buf [32]byte // struct ustat
		return result(unix.Syscall(unix.SYS_USTAT, uintptr(st.Dev), uintptr(unsafe.Pointer(&buf[0])), 0))
	},
	"uselib": func() error {
		p, _ := unix.BytePtrFromString("/nonexistent-nanosandbox-lib")
		return result(unix.Syscall(unix.SYS_USELIB, uintptr(unsafe.Pointer(p)), 0, 0))
	},
	"_sysctl": func() error { return result(unix.Syscall(unix.SYS__SYSCTL, 0, 0, 0)) },
}
