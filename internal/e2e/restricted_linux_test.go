package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The machines where the full sandbox cannot run, simulated: each refuses
// at start with its cause and fix, and with --without-namespaces runs the
// sandbox without namespaces, whose rows hold there too.
//
//   - limit: a user namespace as many namespaces below it as its
//     user.max_user_namespaces allows (1, its own server's): the server
//     runs as uid 1000 in a namespace inside it (userns_linux_test.go's
//     wrapper), and creating another fails with ENOSPC.
//   - docker: a seccomp filter that refuses new namespaces as Docker's
//     default profile does (clone with a namespace flag, unshare, setns
//     and mount fail with EPERM, clone3 with ENOSYS).
//   - nocaps: user namespaces are made, but a filter refuses every mount
//     in them with EPERM, as Ubuntu's AppArmor restriction takes their
//     capabilities away.
//
// (Landlock switched off is the test build of nolandlock_linux_test.go.)

// The filter wrapper's environment: the filter, the server's argv (JSON),
// and the uid to run it as (for a root test, whose server the sandbox
// without namespaces refuses).
const (
	filterEnv     = "_NSB_E2E_FILTER"
	filterArgvEnv = "_NSB_E2E_FILTER_ARGV"
	filterUIDEnv  = "_NSB_E2E_FILTER_UID"
)

func init() {
	if kind := os.Getenv(filterEnv); kind != "" {
		os.Exit(filterMain(kind))
	}
	simulate = simulated
}

// simulated is the command that starts the server with args on the
// machine simulation names.
func simulated(e *env, ctx context.Context, args []string) *exec.Cmd {
	self, err := os.Executable()
	if err != nil {
		e.t.Fatal(err)
	}
	argv, _ := json.Marshal(append([]string{serverBin}, args...))
	cmd := exec.CommandContext(ctx, self)
	switch simulation {
	case "limit":
		cmd.Env = append(append([]string(nil), e.vars...), wrapArgvEnv+"="+string(argv), wrapSetupEnv+"=echo 1 > /proc/sys/user/max_user_namespaces")
		cmd.SysProcAttr = &syscall.SysProcAttr{
			Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
		}
		if e.cred != nil {
			// A root test: the server's uid is e.cred's on the host too,
			// not root's, whom RLIMIT_NPROC does not bind.
			id := int(e.cred.Uid)
			cmd.SysProcAttr.UidMappings = append(cmd.SysProcAttr.UidMappings, syscall.SysProcIDMap{ContainerID: id, HostID: id, Size: 1})
			cmd.SysProcAttr.GidMappings = append(cmd.SysProcAttr.GidMappings, syscall.SysProcIDMap{ContainerID: id, HostID: id, Size: 1})
			cmd.Env = append(cmd.Env, wrapIDEnv+"="+strconv.Itoa(id))
		}
	case "docker", "nocaps":
		cmd.Env = append(append([]string(nil), e.vars...), filterEnv+"="+simulation, filterArgvEnv+"="+string(argv))
		if e.cred != nil {
			cmd.Env = append(cmd.Env, filterUIDEnv+"="+strconv.Itoa(int(e.cred.Uid)))
		}
	default:
		e.t.Fatalf("no simulation %q", simulation)
	}
	return cmd
}

// filterMain runs as the filter wrapper: it takes the uid asked for,
// installs the filter kind on every thread, and becomes the server.
func filterMain(kind string) int {
	runtime.LockOSThread()
	var argv []string
	if err := json.Unmarshal([]byte(os.Getenv(filterArgvEnv)), &argv); err != nil || len(argv) == 0 {
		fmt.Fprintf(os.Stderr, "e2e filter: bad argv: %v\n", err)
		return 3
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "_NSB_E2E_FILTER") {
			env = append(env, kv)
		}
	}
	if v := os.Getenv(filterUIDEnv); v != "" {
		id, _ := strconv.Atoi(v)
		if err := setIDs(id); err != nil {
			fmt.Fprintf(os.Stderr, "e2e filter: uid %d: %v\n", id, err)
			return 3
		}
	}
	prog := filterProgram(kind)
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		fmt.Fprintf(os.Stderr, "e2e filter: no_new_privs: %v\n", err)
		return 3
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog))); errno != 0 {
		fmt.Fprintf(os.Stderr, "e2e filter: seccomp: %v\n", errno)
		return 3
	}
	err := syscall.Exec(argv[0], argv, env)
	fmt.Fprintf(os.Stderr, "e2e filter: exec %s: %v\n", argv[0], err)
	return 3
}

func setIDs(id int) error {
	if err := syscall.Setgroups(nil); err != nil {
		return err
	}
	if err := syscall.Setgid(id); err != nil {
		return err
	}
	return syscall.Setuid(id)
}

// filterProgram is the seccomp filter of a simulation, by syscall number
// alone (an int 0x80 could pass it; it simulates, it does not protect).
func filterProgram(kind string) []unix.SockFilter {
	ret := func(v uint32) unix.SockFilter { return unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: v} }
	errno := func(e unix.Errno) uint32 { return unix.SECCOMP_RET_ERRNO | uint32(e) }
	p := []unix.SockFilter{{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0}} // the syscall number
	deny := func(nr int, action uint32) {
		p = append(p, unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: uint32(nr), Jf: 1}, ret(action))
	}
	switch kind {
	case "docker":
		deny(unix.SYS_CLONE3, errno(unix.ENOSYS))
		for _, nr := range []int{unix.SYS_UNSHARE, unix.SYS_SETNS, unix.SYS_MOUNT} {
			deny(nr, errno(unix.EPERM))
		}
		// clone with a namespace flag (its first argument, low half).
		const namespaces = unix.CLONE_NEWNS | unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET |
			unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP
		p = append(p,
			unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.SYS_CLONE, Jf: 3},
			unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 16},
			unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K, K: namespaces, Jf: 1},
			ret(errno(unix.EPERM)))
	case "nocaps":
		for _, nr := range []int{unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_OPEN_TREE, unix.SYS_MOVE_MOUNT,
			unix.SYS_FSOPEN, unix.SYS_FSMOUNT, unix.SYS_FSCONFIG, unix.SYS_FSPICK, unix.SYS_MOUNT_SETATTR} {
			deny(nr, errno(unix.EPERM))
		}
	}
	return append(p, ret(unix.SECCOMP_RET_ALLOW))
}

// TestRestrictedMachines: on each simulated machine the server refuses at
// start with the cause and the fix, --without-namespaces among them; the
// one-shot form, which skips the probe, says the same when its helper
// fails; and with --without-namespaces the sandbox without namespaces
// holds its rows there.
func TestRestrictedMachines(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("needs sh")
	}
	root := os.Getuid() == 0
	for _, tt := range []struct {
		sim           string
		check, refuse []string // in --check's output, and in the refusal's stderr
		oneShot       []string // the one-shot form's stderr
		oneShotCode   int
	}{
		{
			sim:         "limit",
			check:       []string{"namespaces    MISSING cannot create user namespaces: fork/exec /proc/self/exe: no space left on device (as many namespaces exist as a limit allows: user.max_user_namespaces"},
			refuse:      []string{"error: cannot create user namespaces", "no space left on device", "hint: wait for other sandboxes or containers to end, or raise the limit: sudo sysctl -w user.max_user_namespaces=15000", "--without-namespaces"},
			oneShot:     []string{"error: sandbox setup failed: create namespaces: cannot create user namespaces:", "user.max_user_namespaces", "hint: wait for other sandboxes", "--without-namespaces"},
			oneShotCode: 125,
		},
		{
			sim: "docker",
			check: []string{"namespaces    MISSING cannot create user namespaces: fork/exec /proc/self/exe: operation not permitted (a seccomp filter applies to the server (Seccomp: 2 in /proc/self/status) and refuses them",
				"seccomp       ok    filter with TSYNC", "a filter already applies to the server"},
			refuse: []string{"error: cannot create user namespaces: fork/exec /proc/self/exe: operation not permitted (a seccomp filter applies to the server", "as the default profiles of Docker and Podman do",
				"hint: start the container with the security options that allow user namespaces", "--security-opt seccomp=unconfined --security-opt apparmor=unconfined", "--without-namespaces"},
			oneShot: []string{"cannot create user namespaces:", "operation not permitted (a seccomp filter applies to the server", "hint: start the container", "--without-namespaces"},
			// A root caller makes its first user namespace, for its idmapped
			// grants, before any helper: refused there, with the same words.
			oneShotCode: map[bool]int{false: 125, true: 1}[root],
		},
		{
			sim:     "nocaps",
			check:   []string{"namespaces    MISSING user namespaces give no capabilities here: a mount in a new one fails: mount --make-rprivate /: operation not permitted"},
			refuse:  []string{"error: user namespaces give no capabilities here: a mount in a new one fails: mount --make-rprivate /: operation not permitted", "hint: start the container with", "--without-namespaces"},
			oneShot: []string{"user namespaces give no capabilities here: a mount in a new one fails", "operation not permitted", "hint: start the container with", "--without-namespaces"},
			// A root caller's idmapped grant is its first mount: refused
			// there, with the same words.
			oneShotCode: map[bool]int{false: 125, true: 1}[root],
		},
	} {
		t.Run(tt.sim, func(t *testing.T) {
			simulation = tt.sim
			t.Cleanup(func() { simulation = "" })
			t.Run("refused", func(t *testing.T) {
				e := newEnv(t)
				out, errOut, code := e.runRaw("--check", "--workspace", e.ws)
				for _, w := range append(tt.check, "verdict       REFUSED", "fix:", "--without-namespaces") {
					if code != 1 || !strings.Contains(out, w) {
						t.Errorf("--check: exit %d, want 1 and %q:\n%s%s", code, w, out, errOut)
					}
				}
				_, errOut, code = e.runRaw("--workspace", e.ws) // serving: the probe refuses first
				for _, w := range tt.refuse {
					if code != 1 || !strings.Contains(errOut, w) {
						t.Errorf("serving: exit %d, want 1 and %q in:\n%s", code, w, errOut)
					}
				}
				_, errOut, code = e.run(nil, "true")
				for _, w := range tt.oneShot {
					if code != tt.oneShotCode || !strings.Contains(errOut, w) {
						t.Errorf("one-shot: exit %d, want %d and %q in:\n%s", code, tt.oneShotCode, w, errOut)
					}
				}
			})
			withoutNamespaces = true
			t.Cleanup(func() { withoutNamespaces = false })
			t.Run("without namespaces", reducedRows)
			t.Run("TestEscapeDaemon", TestEscapeDaemon)
			t.Run("TestEscapeCredentials", TestEscapeCredentials)
		})
	}
}
