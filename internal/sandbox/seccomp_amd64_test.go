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
