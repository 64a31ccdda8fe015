//go:build linux && (amd64 || arm64)

package cstage

import (
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSystemCallNumbers checks sys.h's system call numbers and
// per-architecture flags for the architecture the test runs on against
// golang.org/x/sys: amd64 here, arm64 in the GitHub workflow's arm64 job.
// A wrong number would make the helper or the stage call something else.
func TestSystemCallNumbers(t *testing.T) {
	b, err := os.ReadFile("src/sys.h")
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	guard := map[string]string{"amd64": "#if defined(__x86_64__)", "arm64": "#elif defined(__aarch64__)"}[runtime.GOARCH]
	i := strings.Index(src, guard)
	if i < 0 {
		t.Fatalf("sys.h has no %q", guard)
	}
	arch := src[i+len(guard):]
	arch = arch[:strings.Index(arch, "\n#el")] // to #elif or #else
	common := src[strings.Index(src, "// The same numbers on both"):]
	common = common[:strings.Index(common, "};")]
	want := map[string]uintptr{
		"read": unix.SYS_READ, "write": unix.SYS_WRITE, "close": unix.SYS_CLOSE, "lseek": unix.SYS_LSEEK,
		"mmap": unix.SYS_MMAP, "ioctl": unix.SYS_IOCTL, "rt_sigprocmask": unix.SYS_RT_SIGPROCMASK,
		"getpid": unix.SYS_GETPID, "socket": unix.SYS_SOCKET, "sendmsg": unix.SYS_SENDMSG,
		"bind": unix.SYS_BIND, "listen": unix.SYS_LISTEN, "clone": unix.SYS_CLONE, "execve": unix.SYS_EXECVE,
		"wait4": unix.SYS_WAIT4, "kill": unix.SYS_KILL, "fcntl": unix.SYS_FCNTL, "chdir": unix.SYS_CHDIR,
		"getuid": unix.SYS_GETUID, "setsid": unix.SYS_SETSID, "setgroups": unix.SYS_SETGROUPS,
		"setresuid": unix.SYS_SETRESUID, "setresgid": unix.SYS_SETRESGID, "capget": unix.SYS_CAPGET,
		"capset": unix.SYS_CAPSET, "rt_sigtimedwait": unix.SYS_RT_SIGTIMEDWAIT, "statfs": unix.SYS_STATFS,
		"pivot_root": unix.SYS_PIVOT_ROOT, "prctl": unix.SYS_PRCTL, "mount": unix.SYS_MOUNT,
		"umount2": unix.SYS_UMOUNT2, "getdents64": unix.SYS_GETDENTS64, "clock_gettime": unix.SYS_CLOCK_GETTIME,
		"exit_group": unix.SYS_EXIT_GROUP, "openat": unix.SYS_OPENAT, "mkdirat": unix.SYS_MKDIRAT,
		"unlinkat": unix.SYS_UNLINKAT, "symlinkat": unix.SYS_SYMLINKAT, "dup3": unix.SYS_DUP3,
		"pipe2": unix.SYS_PIPE2, "prlimit64": unix.SYS_PRLIMIT64, "seccomp": unix.SYS_SECCOMP,
		"execveat": unix.SYS_EXECVEAT, "statx": unix.SYS_STATX, "renameat2": unix.SYS_RENAMEAT2,
		"open_tree": unix.SYS_OPEN_TREE, "move_mount": unix.SYS_MOVE_MOUNT, "fsopen": unix.SYS_FSOPEN,
		"fsconfig": unix.SYS_FSCONFIG, "fsmount": unix.SYS_FSMOUNT, "close_range": unix.SYS_CLOSE_RANGE,
		"openat2": unix.SYS_OPENAT2, "faccessat2": unix.SYS_FACCESSAT2, "mount_setattr": unix.SYS_MOUNT_SETATTR,
		"landlock_create_ruleset": unix.SYS_LANDLOCK_CREATE_RULESET,
		"landlock_add_rule":       unix.SYS_LANDLOCK_ADD_RULE,
		"landlock_restrict_self":  unix.SYS_LANDLOCK_RESTRICT_SELF,
	}
	seen := 0
	for _, block := range []string{arch, common} {
		for _, m := range regexp.MustCompile(`SYS_([a-z0-9_]+) = (\d+)`).FindAllStringSubmatch(block, -1) {
			n, _ := strconv.Atoi(m[2])
			w, ok := want[m[1]]
			switch {
			case !ok:
				t.Errorf("sys.h's SYS_%s is not checked here: add it", m[1])
			case uintptr(n) != w:
				t.Errorf("sys.h: SYS_%s = %d on %s, want %d", m[1], n, runtime.GOARCH, w)
			}
			seen++
		}
	}
	if seen != len(want) {
		t.Errorf("sys.h names %d system calls for %s, this test %d", seen, runtime.GOARCH, len(want))
	}
	for name, w := range map[string]int{"O_NOFOLLOW": unix.O_NOFOLLOW, "O_DIRECTORY": unix.O_DIRECTORY} {
		m := regexp.MustCompile(`#define ` + name + ` (0[0-7]+)`).FindStringSubmatch(arch)
		if m == nil {
			t.Errorf("sys.h defines no %s for %s", name, runtime.GOARCH)
			continue
		}
		if v, _ := strconv.ParseInt(m[1], 8, 64); int(v) != w {
			t.Errorf("sys.h: %s = %s on %s, want %#o", name, m[1], runtime.GOARCH, w)
		}
	}
	for name, w := range map[string]int{"F_SETFL": unix.F_SETFL, "O_NONBLOCK": unix.O_NONBLOCK, "O_CLOEXEC": unix.O_CLOEXEC, "O_PATH": unix.O_PATH, "AT_EMPTY_PATH": unix.AT_EMPTY_PATH} {
		m := regexp.MustCompile(name + ` = (0x[0-9a-f]+|0[0-7]*|[1-9][0-9]*)`).FindStringSubmatch(src)
		if m == nil {
			t.Errorf("sys.h has no %s", name)
			continue
		}
		if v, _ := strconv.ParseInt(m[1], 0, 64); int(v) != w {
			t.Errorf("sys.h: %s = %s, want %#x", name, m[1], w)
		}
	}
	helperSource, err := os.ReadFile("src/helper.c")
	if err != nil {
		t.Fatal(err)
	}
	for name, w := range map[string]int{
		"CLONE_NEWUSER": unix.CLONE_NEWUSER, "SIGHUP": int(unix.SIGHUP), "SIGINT": int(unix.SIGINT),
		"SIGQUIT": int(unix.SIGQUIT), "SIGKILL": int(unix.SIGKILL), "SIGPIPE": int(unix.SIGPIPE),
		"SIGTERM": int(unix.SIGTERM), "SIGCHLD": int(unix.SIGCHLD), "SIG_SETMASK": unix.SIG_SETMASK,
		"SIG_BLOCK": unix.SIG_BLOCK, "WNOHANG": unix.WNOHANG, "PR_SET_DUMPABLE": unix.PR_SET_DUMPABLE,
		"PR_SET_PDEATHSIG": unix.PR_SET_PDEATHSIG, "CLOCK_MONOTONIC": unix.CLOCK_MONOTONIC,
		"PR_SET_NAME": unix.PR_SET_NAME,
	} {
		m := regexp.MustCompile(`\b` + name + ` = (0x[0-9a-f]+|[0-9]+)`).FindStringSubmatch(string(helperSource))
		if m == nil {
			t.Errorf("helper.c has no %s", name)
			continue
		}
		if v, _ := strconv.ParseInt(m[1], 0, 64); int(v) != w {
			t.Errorf("helper.c: %s = %s, want %#x", name, m[1], w)
		}
	}
}
