package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// probe finds what this machine can enforce. Unless quick, it starts one
// short-lived process to prove user namespaces work.
func probe(quick bool) Capabilities {
	c := Capabilities{OS: runtime.GOOS, Arch: runtime.GOARCH}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		c.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	c.LandlockABI = landlockABI()
	c.Seccomp = probeSeccomp()
	c.Cgroup, c.CgroupCPU, c.CgroupWhy = probeCgroup()
	c.PidNSMax = kernelAtLeast(c.Kernel, 6, 14)
	c.Identity = identity(os.Getuid())
	if !quick {
		c.UserNS, c.UserNSFix = probeUserNS()
	}
	return c
}

// identity says whom a caller with uid runs commands as on the host.
func identity(uid int) string {
	if uid == 0 {
		return fmt.Sprintf("uid %d, not root (root inside; granted paths idmapped to root)", rootCallerID)
	}
	return fmt.Sprintf("the caller, uid %d", uid)
}

func probeSeccomp() string {
	action := uint32(unix.SECCOMP_RET_KILL_PROCESS)
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_ACTION_AVAIL, 0, uintptr(unsafe.Pointer(&action)))
	if errno != 0 {
		return "seccomp(SECCOMP_GET_ACTION_AVAIL): " + errno.Error()
	}
	return ""
}

// probeUserNS starts this binary in every namespace the sandbox uses, doing
// nothing, and explains a failure.
func probeUserNS() (why, fix string) {
	cmd := exec.Command("/proc/self/exe")
	cmd.Env = []string{childEnv + "=noop"}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  namespaceFlags,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
	}
	err := cmd.Run()
	if err == nil {
		return "", ""
	}
	return diagnoseUserNS(err)
}

// diagnoseUserNS explains why creating the sandbox's namespaces failed with
// err, and how to allow it.
func diagnoseUserNS(err error) (why, fix string) {
	why = err.Error()
	read := func(p string) string {
		b, _ := os.ReadFile(p)
		return strings.TrimSpace(string(b))
	}
	max := read("/proc/sys/user/max_user_namespaces")
	switch {
	case errors.Is(err, unix.ENOSPC) && max != "0":
		// Namespaces work, but as many exist as a limit allows: here, or
		// in a user namespace this one is inside (a container's), whose
		// value this one does not show.
		return why + " (as many namespaces exist as a limit allows: user.max_user_namespaces, " + max + " here, or the same limit of the container the server runs in; the other limits are in /proc/sys/user)",
			"wait for other sandboxes or containers to end, or raise the limit: sudo sysctl -w user.max_user_namespaces=15000 (on the host, or in the container's namespace)"
	case read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1":
		return why + " (AppArmor restricts unprivileged user namespaces, as on Ubuntu 23.10+)",
			"allow them for this binary with an AppArmor profile that grants \"userns\", or system-wide with: sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0"
	case read("/proc/sys/kernel/unprivileged_userns_clone") == "0":
		return why + " (kernel.unprivileged_userns_clone is 0)", "sudo sysctl -w kernel.unprivileged_userns_clone=1"
	case max == "0":
		return why + " (user.max_user_namespaces is 0)", "sudo sysctl -w user.max_user_namespaces=15000"
	}
	return why, "allow unprivileged user namespaces; inside a container, allow unshare and clone of user namespaces (for Docker: --security-opt seccomp=unconfined --security-opt apparmor=unconfined)"
}
