package sandboxtest

import (
	"os"
	"os/exec"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

func landlockABI() int {
	abi, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(abi)
}

func userNamespaces() error {
	cmd := exec.Command("/proc/self/exe", "-test.run=^$")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}},
	}
	return cmd.Run()
}

func seccompAvailable() bool {
	b, err := os.ReadFile("/proc/self/status")
	return err == nil && strings.Contains(string(b), "\nSeccomp:")
}

func cgroup2Delegated() string {
	var st unix.Statfs_t
	if err := unix.Statfs("/sys/fs/cgroup", &st); err != nil {
		return "no /sys/fs/cgroup"
	}
	if st.Type != unix.CGROUP2_SUPER_MAGIC {
		return "this machine has cgroup v1 (or a v1/v2 hybrid), not v2"
	}
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "cannot read /proc/self/cgroup"
	}
	rel := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(b)), "0::"))
	dir := "/sys/fs/cgroup" + rel
	if unix.Access(dir+"/cgroup.procs", unix.W_OK) != nil || unix.Access(dir, unix.W_OK) != nil {
		return "this process's cgroup " + rel + " is not a delegated, writable subtree"
	}
	ctl, _ := os.ReadFile(dir + "/cgroup.controllers")
	for _, c := range []string{"memory", "pids"} {
		if !strings.Contains(string(ctl), c) {
			return "the delegated cgroup " + rel + " lacks the " + c + " controller"
		}
	}
	return ""
}
