package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// Some tests change what the server's machine allows (the namespace limit)
// or how it is mounted (a second mount of the home), which only root can do
// to the real machine. They run the server in user namespaces of its own
// instead, where whoever runs the test may: the test binary itself, started
// again as a wrapper, is root in an outer user namespace (and mount
// namespace), where it makes the mounts a test asks for and where a test
// later changes the limits (setUserNSLimit); the server runs as uid
// wrappedID in an inner one, an ordinary caller, as it would on a machine
// where root made those changes.

// Environment of the wrapper: the server's argv (JSON), and a shell script
// to run first, as root in the outer namespaces.
const (
	wrapArgvEnv  = "_NSB_E2E_WRAP_ARGV"
	wrapSetupEnv = "_NSB_E2E_WRAP_SETUP"
	// wrapIDEnv, if set, is the outer namespace's uid and gid the server's
	// wrappedID maps to, instead of its root.
	wrapIDEnv = "_NSB_E2E_WRAP_ID"
)

// wrappedID is the server's uid and gid in the inner user namespace; the
// outer one's root, that is the one who runs the test, owns its files.
const wrappedID = 1000

func init() {
	if os.Getenv(wrapArgvEnv) != "" {
		os.Exit(wrapMain())
	}
}

// wrapMain runs in the outer namespaces: it runs the setup script, then
// the server in the inner user namespace with this process's stdio, passes
// on the signals that stop it, and exits as the server did.
func wrapMain() int {
	var argv []string
	if err := json.Unmarshal([]byte(os.Getenv(wrapArgvEnv)), &argv); err != nil || len(argv) == 0 {
		fmt.Fprintf(os.Stderr, "e2e wrapper: bad argv: %v\n", err)
		return 3
	}
	setup := os.Getenv(wrapSetupEnv)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "_NSB_E2E_WRAP_") {
			env = append(env, kv)
		}
	}
	if setup != "" {
		sh := exec.Command("/bin/sh", "-c", setup)
		sh.Env, sh.Stdout, sh.Stderr = env, os.Stderr, os.Stderr
		if err := sh.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "e2e wrapper: setup: %v\n", err)
			return 3
		}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	outer, _ := strconv.Atoi(os.Getenv(wrapIDEnv)) // 0, its root, unless set
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: wrappedID, HostID: outer, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: wrappedID, HostID: outer, Size: 1}},
		Pdeathsig:   syscall.SIGKILL,
	}
	if outer != 0 {
		// Not this process's own uid: the server takes it once inside.
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: wrappedID, Gid: wrappedID, NoSetGroups: true}
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e wrapper: start %s: %v\n", argv[0], err)
		return 3
	}
	go func() {
		for s := range sigs {
			cmd.Process.Signal(s)
		}
	}()
	err := cmd.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return exitCode(ee.ProcessState)
	default:
		fmt.Fprintf(os.Stderr, "e2e wrapper: %v\n", err)
		return 3
	}
}

// wrapped returns the command that runs the server with args, as described
// above, after setup (a shell script, or "").
func (e *env) wrapped(setup string, args ...string) *exec.Cmd {
	e.t.Helper()
	self, err := os.Executable()
	if err != nil {
		e.t.Fatal(err)
	}
	argv, _ := json.Marshal(append([]string{serverBin}, args...))
	cmd := exec.Command(self)
	cmd.Env = append(append([]string(nil), e.vars...), wrapArgvEnv+"="+string(argv), wrapSetupEnv+"="+setup)
	cmd.Dir = e.ws
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
	}
	return cmd
}

// setUserNSLimit writes a user.* sysctl (max_user_namespaces, say) of the
// outer user namespace of a wrapped server (see wrapped): only what is made
// inside it counts against it.
func setUserNSLimit(t *testing.T, s *session, name string, value int) {
	t.Helper()
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		t.Skipf("needs nsenter (util-linux): %v", err)
	}
	// The test's own uid is root there: a shell it starts keeps its
	// capabilities in that namespace.
	pid := fmt.Sprint(s.cmd.Process.Pid)
	script := fmt.Sprintf("echo %d > /proc/sys/user/%s", value, name)
	if out, err := exec.Command(nsenter, "--preserve-credentials", "--user", "--target", pid, "sh", "-c", script).CombinedOutput(); err != nil {
		t.Fatalf("set user.%s=%d in the server's user namespace: %v: %s", name, value, err, out)
	}
}
