//go:build linux

package sandbox

import "golang.org/x/sys/unix"

// archModeCalls are amd64's older calls that set a mode, which arm64 never had.
var archModeCalls = []seccompModeCall{
	{"chmod", unix.SYS_CHMOD, 1, -1},
	{"mkdir", unix.SYS_MKDIR, 1, -1},
	{"mknod", unix.SYS_MKNOD, 1, -1},
	{"creat", unix.SYS_CREAT, 1, -1},
	{"open", unix.SYS_OPEN, 2, 1},
}

// archDenied are amd64's own denials.
var archDenied = []seccompSyscall{
	{"modify_ldt", unix.SYS_MODIFY_LDT},
	{"iopl", unix.SYS_IOPL},
	{"ioperm", unix.SYS_IOPERM},
	{"uselib", unix.SYS_USELIB},
	{"ustat", unix.SYS_USTAT},
	{"sysfs", unix.SYS_SYSFS},
	{"_sysctl", unix.SYS__SYSCTL},
}
