package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
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
	c.LandlockABI, c.LandlockWhy = probeLandlock()
	c.Seccomp = probeSeccomp()
	c.SeccompInherited = seccompMode() == 2
	c.Container = detectContainer()
	c.Cgroup, c.CgroupCPU, c.CgroupWhy = probeCgroup()
	c.PidNSMax = kernelAtLeast(c.Kernel, 6, 14)
	c.Identity = identity(os.Getuid())
	if !quick {
		c.UserNSKind, c.UserNS, c.UserNSFix = probeUserNS()
		if f := readHostFacts(); c.UserNSKind != "" && f.sysctl("kernel.apparmor_restrict_unprivileged_userns") == "1" {
			c.AppArmor = true
		}
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

// probeUserNS starts this binary in every namespace the sandbox uses, where
// it makes the mount every helper makes first, and explains a failure: the
// namespaces refused, or made without the capabilities to mount in them
// (Ubuntu's AppArmor restriction gives a new user namespace no capabilities
// rather than refusing it).
func probeUserNS() (kind, why, fix string) {
	cmd := exec.Command("/proc/self/exe")
	cmd.Env = []string{childEnv + "=probe"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  namespaceFlags,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
	}
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return "", "", ""
	case errors.As(err, &ee) && ee.ExitCode() == probeNoCapabilities:
		why, fix := readHostFacts().diagnose(errors.New(strings.TrimSpace(stderr.String())), true)
		return UserNSNoCapabilities, why, fix
	}
	why, fix = readHostFacts().diagnose(err, false)
	return UserNSRefused, why, fix
}

// probeNoCapabilities is the probe's exit status when the namespaces were
// made but a mount in them failed.
const probeNoCapabilities = 3

// probeMain is the probe's side: the first mount of every helper.
func probeMain() {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		fmt.Fprintf(os.Stderr, "mount --make-rprivate /: %v", err)
		os.Exit(probeNoCapabilities)
	}
	os.Exit(0)
}

// diagnoseUserNS explains why creating the sandbox's namespaces failed with
// err, and how to allow it.
func diagnoseUserNS(err error) (why, fix string) {
	return readHostFacts().diagnose(err, false)
}

// noCapabilities explains a helper's first mount failing with err in the
// namespaces it was just given (the probe found them usable, or a one-shot
// command skipped it), or returns "" when err is not that.
func noCapabilities(se *SetupError) (why, fix string) {
	if se.Op != "mount --make-rprivate /" || se.Errno != unix.EPERM && se.Errno != unix.EACCES {
		return "", ""
	}
	return readHostFacts().diagnose(se, true)
}

// hostFacts is what a diagnosis reads from the machine; tests fake it.
type hostFacts struct {
	// sysctl reads /proc/sys/NAME (dots for slashes), trimmed; "" if it
	// does not exist.
	sysctl func(name string) string
	// filtered is set when a seccomp filter applies to the server
	// (Seccomp: 2 in /proc/self/status): a container's, or its launcher's.
	filtered bool
	// container is "Docker", "Podman" or "Kubernetes" where the server
	// seems to run in one, else "".
	container string
	// exe is this binary's real path, or "".
	exe string
}

func readHostFacts() hostFacts {
	exe, _ := os.Executable()
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	return hostFacts{
		sysctl: func(name string) string {
			b, _ := os.ReadFile("/proc/sys/" + strings.ReplaceAll(name, ".", "/"))
			return strings.TrimSpace(string(b))
		},
		filtered:  seccompMode() == 2,
		container: detectContainer(),
		exe:       exe,
	}
}

// seccompMode is this process's seccomp mode: 0 none, 1 strict, 2 a filter.
func seccompMode() int {
	// prctl says it without the kernel writing out all of
	// /proc/self/status. (It would kill a process in strict mode, which
	// could not have started a Go runtime.)
	if n, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0); err == nil {
		return n
	}
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Seccomp:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

// detectContainer names the container runtime the server seems to run
// under, by the marks each leaves, or returns "".
func detectContainer() string {
	exists := func(p string) bool { _, err := os.Lstat(p); return err == nil }
	switch {
	case exists("/.dockerenv"):
		return "Docker"
	case exists("/run/.containerenv"):
		return "Podman"
	case os.Getenv("KUBERNETES_SERVICE_HOST") != "":
		return "Kubernetes"
	}
	return ""
}

// diagnose explains why the sandbox's namespaces failed with err: refused
// at creation, or, when noCaps, made but without the capabilities to mount
// in them. It says how to allow them, and how to run without them.
func (f hostFacts) diagnose(err error, noCaps bool) (why, fix string) {
	why = err.Error()
	max := f.sysctl("user.max_user_namespaces")
	apparmor := f.sysctl("kernel.apparmor_restrict_unprivileged_userns") == "1"
	denied := errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES)
	in := "a container"
	if f.container != "" {
		in = "a " + f.container + " container"
	}
	generic := "allow unprivileged user namespaces (" + sysctlFix("kernel.unprivileged_userns_clone", "1") +
		" where that exists, and user.max_user_namespaces above 0)\n" + withoutNamespacesFix
	switch {
	case noCaps && apparmor:
		return "a mount in a new one fails: " + why + " (AppArmor restricts unprivileged user namespaces, as on Ubuntu 23.10+: kernel.apparmor_restrict_unprivileged_userns is 1, so a new one has no capabilities)",
			appArmorFix(f.exe)
	case noCaps && (f.container != "" || f.filtered):
		what := "the security profile of " + in + " refuses them (Docker's default AppArmor profile denies mounts)"
		if f.container == "" {
			what = "a seccomp filter applies to the server (Seccomp: 2 in /proc/self/status), as in a container, and a security profile refuses mounts"
		}
		return "a mount in a new one fails: " + why + " (" + what + ")", containerFix(f.container)
	case noCaps:
		return "a mount in a new one fails: " + why + " (a security module takes their capabilities away)", generic
	case errors.Is(err, unix.ENOSPC) && max != "0":
		// Namespaces work, but as many exist as a limit allows: here, or
		// in a user namespace this one is inside (a container's), whose
		// value this one does not show.
		return why + " (as many namespaces exist as a limit allows: user.max_user_namespaces, " + max + " here, or the same limit of the container the server runs in; the other limits are in /proc/sys/user)",
			"wait for other sandboxes or containers to end, or raise the limit: " + sysctlFix("user.max_user_namespaces", "15000") + " (on the host, or in the container's namespace)\n" + withoutNamespacesFix
	case apparmor && denied:
		return why + " (AppArmor restricts unprivileged user namespaces, as on Ubuntu 23.10+: kernel.apparmor_restrict_unprivileged_userns is 1)",
			appArmorFix(f.exe)
	case f.sysctl("kernel.unprivileged_userns_clone") == "0":
		return why + " (kernel.unprivileged_userns_clone is 0)",
			sysctlFix("kernel.unprivileged_userns_clone", "1") + "\n" + withoutNamespacesFix
	case max == "0":
		return why + " (user.max_user_namespaces is 0)",
			sysctlFix("user.max_user_namespaces", "15000") + "\n" + withoutNamespacesFix
	case f.filtered && denied:
		return why + " (a seccomp filter applies to the server (Seccomp: 2 in /proc/self/status) and refuses them, as the default profiles of Docker and Podman do in " + in + ")",
			containerFix(f.container)
	}
	return why, generic
}
