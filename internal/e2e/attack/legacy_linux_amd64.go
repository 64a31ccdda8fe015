package main

import "golang.org/x/sys/unix"

// legacyCalls are the amd64 system calls that arm64 lacks, which set a
// mode; setMode makes them by name.
var legacyCalls = map[string]uintptr{
	"chmod": unix.SYS_CHMOD,
	"open":  unix.SYS_OPEN,
	"creat": unix.SYS_CREAT,
	"mkdir": unix.SYS_MKDIR,
	"mknod": unix.SYS_MKNOD,
}
