package sandbox

import (
	"errors"
	"fmt"
	"path/filepath"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Landlock is the second layer under the mount tree (DESIGN.md §3): even if
// a mount were left writable by mistake, the command can still write only
// beneath the roots granted here. It cannot take access away below a granted
// directory, so carve-outs (.git/hooks, --read-only inside the workspace) are
// made by mounts, not here; and it does not restrict stat(2).
//
// Network accesses (LANDLOCK_ACCESS_NET_*, Landlock ABI 4+) are not handled.
// The command runs in its own network namespace, which has only a loopback
// interface, so there is nothing outside to reach with TCP; the --allow-net
// proxy is a listening socket on that loopback, and commands may listen and
// connect on their own loopback (a test server, a language server). Handling
// TCP would break exactly those, and would add nothing for what escapes the
// namespace: Landlock's TCP rules see neither UDP nor MPTCP, which seccomp
// refuses instead. Without namespaces (landlockRules.NoTCP) there is no
// loopback of the sandbox's own: TCP is handled and nothing granted, under
// the seccomp filter that refuses internet sockets already.

const (
	// landlockReadAccess is what a read-only root grants: read, list and
	// execute. Not IOCTL_DEV (Landlock ABI 5+): ioctl(2) on a device file
	// opened beneath a read-only root is denied; the devices a command needs
	// ioctls on (terminals, ptmx) are listed in landlockRules.Devices.
	// Landlock checks at open(2), so descriptors opened before the
	// restriction, such as the command's stdio even when it is a terminal,
	// keep every ioctl; and ioctls on pipes, sockets and regular files are
	// not IOCTL_DEV at all.
	landlockReadAccess = unix.LANDLOCK_ACCESS_FS_EXECUTE |
		unix.LANDLOCK_ACCESS_FS_READ_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_DIR

	// landlockDeviceAccess is what a device root grants: read, write and
	// ioctl. TRUNCATE too, though the kernel ignores O_TRUNC on a device (a
	// shell's "> /dev/null" needs only WRITE_FILE): it matters only if an
	// entry is a regular file.
	landlockDeviceAccess = unix.LANDLOCK_ACCESS_FS_READ_FILE |
		unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
		unix.LANDLOCK_ACCESS_FS_TRUNCATE |
		unix.LANDLOCK_ACCESS_FS_IOCTL_DEV

	// landlockFileAccess holds the rights that apply to a file that is not
	// a directory (the kernel's ACCESS_FILE); a rule on such a file may
	// grant nothing else, or landlock_add_rule fails with EINVAL.
	landlockFileAccess = unix.LANDLOCK_ACCESS_FS_EXECUTE |
		unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_FILE |
		unix.LANDLOCK_ACCESS_FS_TRUNCATE |
		unix.LANDLOCK_ACCESS_FS_IOCTL_DEV |
		unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX
)

// landlockRules is what a command may reach through Landlock. Paths must be
// absolute and exist; symbolic links are followed, so callers pass resolved
// paths. A nil list grants nothing.
type landlockRules struct {
	ReadOnly []string // read, list and execute beneath each: typically just "/"
	Writable []string // every file access beneath each (the workspace, --writable paths, /tmp, /var/tmp, /run, /dev/shm, the private home)
	Devices  []string // write to these files only (plus ioctl on devices at ABI 5+): /dev/null, /dev/zero, /dev/full, /dev/tty, /dev/ptmx, and /dev/pts (directory)
	// NoTCP handles TCP bind and connect and grants neither (Landlock ABI
	// 4+; below, seccomp alone refuses internet sockets): commands without
	// a network namespace, and with the network off.
	NoTCP bool `json:",omitempty"`
}

// landlockAccess is what one ABI version lets us handle and grant.
type landlockAccess struct {
	handledFS   uint64  // every filesystem right the ABI defines
	scoped      uint64  // IPC scopes (Landlock ABI 6+)
	readOnly    uint64  // granted beneath landlockRules.ReadOnly
	writable    uint64  // granted beneath landlockRules.Writable
	devices     uint64  // granted beneath landlockRules.Devices
	rulesetSize uintptr // how much of unix.LandlockRulesetAttr this ABI reads
}

// landlockAccessFor returns the rights to handle and grant on a kernel with
// Landlock ABI abi (1 or more). An ABI newer than this code knows gets what
// the newest known one gets.
func landlockAccessFor(abi int) landlockAccess {
	var a landlockAccess
	a.handledFS = unix.LANDLOCK_ACCESS_FS_EXECUTE |
		unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_DIR |
		unix.LANDLOCK_ACCESS_FS_REMOVE_DIR |
		unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
		unix.LANDLOCK_ACCESS_FS_MAKE_CHAR |
		unix.LANDLOCK_ACCESS_FS_MAKE_DIR |
		unix.LANDLOCK_ACCESS_FS_MAKE_REG |
		unix.LANDLOCK_ACCESS_FS_MAKE_SOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_FIFO |
		unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_SYM
	a.rulesetSize = unsafe.Offsetof(unix.LandlockRulesetAttr{}.Handled_access_net)
	if abi >= 2 {
		// Linking or renaming into another directory (Landlock ABI 2+).
		// Below ABI 2 every layer denies it with EXDEV whatever is granted,
		// so tools fall back to copying.
		a.handledFS |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		// truncate(2) and O_TRUNC (Landlock ABI 3+). Below ABI 3, truncate(2)
		// by path beneath a read-only root is left to the read-only mount.
		a.handledFS |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if abi >= 4 {
		// The ruleset grows handled_access_net (Landlock ABI 4+), left zero:
		// see the note on network accesses at the top of this file.
		a.rulesetSize = unsafe.Offsetof(unix.LandlockRulesetAttr{}.Scoped)
	}
	if abi >= 5 {
		// ioctl(2) on character and block devices (Landlock ABI 5+).
		a.handledFS |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	if abi >= 6 {
		// Signals and abstract unix sockets reach only processes in this
		// domain or below (Landlock ABI 6+): not the helper, the server or
		// anything else on the host (the pid namespace hides them too, but an
		// abstract socket is bound to the network namespace, not to a path).
		a.scoped = unix.LANDLOCK_SCOPE_SIGNAL | unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
		a.rulesetSize = unsafe.Offsetof(unix.LandlockRulesetAttr{}.Quiet_access_fs)
	}
	if abi >= 9 {
		// connect(2) and sendmsg(2) to pathname unix sockets (Landlock ABI
		// 9+), granted only beneath writable roots: sockets elsewhere
		// (agents, docker, D-Bus, anything in a read-only view) are out of
		// reach. Below ABI 9 they are reachable through any readable view
		// (DESIGN.md §2.3), which is why the mounts hide /run, /tmp and home.
		a.handledFS |= unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX
	}
	a.readOnly = landlockReadAccess & a.handledFS
	a.writable = a.handledFS
	a.devices = landlockDeviceAccess & a.handledFS
	return a
}

// landlockABI returns the kernel's Landlock ABI version, or 0 when Landlock is
// unsupported or disabled (ENOSYS, EOPNOTSUPP). It never fails open: a
// caller given 0 applies no Landlock only where the mounts hold the policy,
// and says so.
func landlockABI() int {
	abi, _ := kernelLandlock()
	return abi
}

// kernelLandlock returns the kernel's Landlock ABI version, or 0 and why
// there is none.
func kernelLandlock() (abi int, why string) {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	switch errno {
	case 0:
		return int(v), ""
	case unix.ENOSYS:
		return 0, "this kernel has no Landlock (Linux before 5.13, or built without CONFIG_SECURITY_LANDLOCK)"
	case unix.EOPNOTSUPP:
		return 0, "Landlock is built into this kernel but not enabled: \"landlock\" is missing from the lsm= boot parameter"
	}
	// A seccomp filter (an older container runtime's) may refuse the call:
	// then nothing can be told, which counts as no Landlock.
	return 0, "landlock_create_ruleset: " + errno.Error() + " (a seccomp filter, a container's, may refuse it)"
}

// probeLandlock is kernelLandlock, unless a test build switched Landlock
// off (landlockSwitchedOff), which then looks like a kernel without it.
func probeLandlock() (abi int, why string) {
	if landlockSwitchedOff {
		return 0, "switched off in this test build (-tags nanosandbox_nolandlock)"
	}
	return kernelLandlock()
}

// restrictLandlock enforces r on the calling thread (landlock_restrict_self),
// handling every access right the given ABI knows. The caller has set
// no_new_privs already and runs it on a goroutine locked to its OS thread, right
// before execve (so only this thread matters; do not use TSYNC).
//
// abi is the kernel's version from [landlockABI]; below 1 it is an error, never
// a silent no-op. An abi above the kernel's fails in landlock_create_ruleset
// (EINVAL) rather than enforcing less. Each path is opened with O_PATH; one that
// cannot be opened is an error naming it.
func restrictLandlock(abi int, r landlockRules) error {
	if abi < 1 {
		// Refused, not skipped: a library's best effort would return nil here
		// and enforce nothing (Landlock needs Linux 5.13+ with landlock in the
		// lsm= boot parameter).
		return fmt.Errorf("landlock_create_ruleset: Landlock ABI %d (unsupported or disabled on this kernel): %w", abi, unix.EOPNOTSUPP)
	}
	a := landlockAccessFor(abi)
	attr := unix.LandlockRulesetAttr{Handled_access_fs: a.handledFS, Scoped: a.scoped}
	if r.NoTCP && abi >= 4 {
		attr.Handled_access_net = unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
	}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), a.rulesetSize, 0)
	if errno != 0 {
		return fmt.Errorf("landlock_create_ruleset: %w", errno)
	}
	ruleset := int(fd) // O_CLOEXEC already: the kernel always sets it
	defer unix.Close(ruleset)

	for _, g := range []struct {
		paths    []string
		access   uint64
		readOnly bool
	}{
		{r.ReadOnly, a.readOnly, true},
		{r.Writable, a.writable, false},
		{r.Devices, a.devices, false},
	} {
		for _, path := range g.paths {
			err := landlockAddRule(ruleset, path, g.access, g.readOnly)
			if g.readOnly && errors.Is(err, errGone) {
				// Listed when the server started (the sandbox without
				// namespaces lists the system's trees entry by entry),
				// gone or made a symlink since: it grants nothing.
				continue
			}
			if err != nil {
				return err
			}
		}
	}

	// Flags 0: this thread only (it is about to execve), and the kernel's
	// default audit logging (Landlock ABI 7+ could tune it).
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0); errno != 0 {
		if errors.Is(errno, unix.EPERM) {
			return fmt.Errorf("landlock_restrict_self: %w (no_new_privs is not set and the thread lacks CAP_SYS_ADMIN)", errno)
		}
		return fmt.Errorf("landlock_restrict_self: %w", errno)
	}
	return nil
}

// errGone marks a read-only path that no longer exists, or whose last
// element is now a symlink, which a read-only rule skips.
var errGone = errors.New("gone since it was listed")

// landlockAddRule grants access beneath path, or on path alone when it is not
// a directory (then only the rights that apply to a file are kept). A
// read-only path is opened without following a symlink in its last
// element: one that is missing or a symlink now is errGone.
func landlockAddRule(ruleset int, path string, access uint64, readOnly bool) error {
	if !filepath.IsAbs(path) {
		return fmt.Errorf("landlock_add_rule %q: not an absolute path", path)
	}
	flags := unix.O_PATH | unix.O_CLOEXEC
	if readOnly {
		flags |= unix.O_NOFOLLOW
	}
	fd, err := unix.Open(path, flags, 0)
	if readOnly && errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("landlock_add_rule %q: %w: %w", path, errGone, err)
	}
	if err != nil {
		return fmt.Errorf("landlock_add_rule %q: open: %w", path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("landlock_add_rule %q: fstat: %w", path, err)
	}
	if readOnly && st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return fmt.Errorf("landlock_add_rule %q: %w: a symlink", path, errGone)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		access &= landlockFileAccess
	}
	attr := unix.LandlockPathBeneathAttr{Allowed_access: access, Parent_fd: int32(fd)}
	_, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), unix.LANDLOCK_RULE_PATH_BENEATH,
		uintptr(unsafe.Pointer(&attr)), 0, 0, 0)
	if errno != 0 {
		return fmt.Errorf("landlock_add_rule %q: %w", path, errno)
	}
	return nil
}
