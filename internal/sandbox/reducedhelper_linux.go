package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// reducedHelperMain is the helper of a call without namespaces
// (reduced_linux.go): no pid 1 of a namespace whose end kills everything
// in it, but the command's subreaper, to which every process the command
// orphans comes, and which kills them all when the call ends (finish). It
// ends a call on SIGUSR2: the server's stop, or its death (Pdeathsig).
// Any step that fails reports why and exits 255.
func reducedHelperMain() {
	// The exec stage dies with this process (Pdeathsig), which follows the
	// thread that forked it: this one, kept to the end.
	runtime.LockOSThread()
	h := &helper{rep: os.NewFile(reportFD, "report"), reduced: true, early: true}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		h.fail(fmt.Errorf("prctl(PR_SET_CHILD_SUBREAPER): %w", err))
	}
	h.guardSelf()
	h.endOnSignal()
	var err error
	if h.specR, h.specW, err = os.Pipe(); err != nil {
		h.fail(fmt.Errorf("pipe: %w", err))
	}
	h.startStage()
	h.takeCall()
	// Nothing inherited above the report pipe reaches the command.
	if err := unix.CloseRange(reportFD+1, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		h.fail(fmt.Errorf("close_range: %w", err))
	}
	h.handOver()
	h.enforceTimeout()
	h.forwardSignals()
	h.reap()
}

// endOnSignal ends the call, or the helper waiting for one, on SIGUSR2.
func (h *helper) endOnSignal() {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, unix.SIGUSR2)
	go func() {
		<-sigs
		h.finish(&exitReport{Code: -1, Signal: int(unix.SIGKILL)})
	}()
}

// startReducedStage starts the exec stage as the caller, in no namespace
// of its own, killed if this process dies first.
func startReducedStage(specR, rep *os.File) (*os.Process, error) {
	proc, err := os.StartProcess("/proc/self/exe", []string{"nanosandbox-mcp: exec"}, &os.ProcAttr{
		Dir:   "/",
		Env:   []string{childEnv + "=exec"},
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr, specR, rep},
		Sys:   &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		return nil, fmt.Errorf("start exec stage: %w", err)
	}
	return proc, nil
}

// killDeadline bounds killDescendants: a process stuck in the kernel
// (uninterruptible sleep) cannot die, and the call must still end.
const killDeadline = 5 * time.Second

// killDescendants kills every process below this one. As their subreaper
// it is the parent of every orphan of the call: it kills its children and
// reaps them, and again, as their own children come to it once they are
// gone, until none is left. SIGKILL cannot be caught, and a process killed
// cannot fork, so each round leaves fewer (RLIMIT_NPROC bounds them all).
func killDescendants() {
	deadline := time.Now().Add(killDeadline)
	for time.Now().Before(deadline) {
		for _, pid := range childPids() {
			unix.Kill(pid, unix.SIGKILL)
		}
		reaped := false
		for {
			var ws unix.WaitStatus
			pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if errors.Is(err, unix.ECHILD) {
				return // none left
			}
			if err != nil || pid <= 0 {
				break
			}
			reaped = true
		}
		if !reaped {
			time.Sleep(time.Millisecond) // the kills land
		}
	}
}

// childPids lists this process's children: from each thread's
// /proc/self/task/TID/children (CONFIG_PROC_CHILDREN), or else from every
// process's parent in /proc.
func childPids() []int {
	tasks, err := os.ReadDir("/proc/self/task")
	if err == nil {
		var pids []int
		found := false
		for _, t := range tasks {
			b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/children")
			if err != nil {
				continue
			}
			found = true
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil {
					pids = append(pids, pid)
				}
			}
		}
		if found {
			return pids
		}
	}
	self := os.Getpid()
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The parent is the 4th field, the 2nd after the command's name,
		// which may hold spaces and parentheses: counted from the last ')'.
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i >= 0 {
			if f := strings.Fields(s[i+1:]); len(f) > 1 && f[1] == strconv.Itoa(self) {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}
