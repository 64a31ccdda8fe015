package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
)

// namespaceFlags are the helper's new namespaces (DESIGN.md §3).
const namespaceFlags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID |
	syscall.CLONE_NEWNET | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS | syscall.CLONE_NEWCGROUP

// waitDelay bounds how long output is awaited after the helper is gone;
// nothing should hold the pipes then, since the pid namespace died with it.
const waitDelay = 2 * time.Second

// timeoutGrace is how long after the timeout the server kills the helper
// itself, should the helper (which enforces the timeout and reports what
// the command was doing) not have ended the call.
const timeoutGrace = 2 * time.Second

type osState struct {
	static   staticPlan
	landlock landlockRules
	uid, gid int
	cgroups  *cgroupTree // nil unless a limit is held by cgroup v2
}

func (s *Sandbox) prepare() error {
	s.os.uid, s.os.gid = os.Getuid(), os.Getgid()
	if s.mech.Memory == "cgroup" || s.mech.Processes == "cgroup" || s.mech.CPUs == "cgroup" {
		tree, err := adoptCgroup(s.caps.Cgroup, s.mech.CPUs == "cgroup")
		if err != nil {
			// The probe was too hopeful: hold the limits without cgroups,
			// or refuse those that need them.
			s.caps.Cgroup, s.caps.CgroupWhy = "", "the delegated cgroup is unusable: "+err.Error()
			mech, r := mechanisms(s.pol.Limits, s.caps, s.os.uid)
			if r != nil {
				return r
			}
			s.mech = mech
		} else {
			s.os.cgroups = tree
		}
	}
	s.os.static = planStatic(s.pol, hostFS{})
	writable := append([]string{"/dev/shm"}, s.os.static.writable...)
	s.os.landlock = landlockRules{
		ReadOnly: []string{"/"},
		Writable: writable,
		Devices:  []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx", "/dev/pts"},
	}
	return nil
}

func (s *Sandbox) dryRun() error {
	_, err := s.start(context.Background(), &Command{}, true)
	return err
}

func (s *Sandbox) run(ctx context.Context, c *Command) (Result, error) {
	return s.start(ctx, c, false)
}

func (s *Sandbox) start(ctx context.Context, c *Command, probe bool) (Result, error) {
	began := time.Now()
	prots, gits, release, err := s.ph.plan(func() ([]protection, gitState, error) {
		return gitProtections(s.pol, hostFS{})
	})
	if err != nil {
		return Result{}, err
	}
	defer release()

	raw, err := json.Marshal(spec{
		Ops:         planCall(s.pol, s.os.static, prots, hostFS{}),
		UID:         s.os.uid,
		GID:         s.os.gid,
		Dir:         s.pol.Workspace,
		Path:        c.Path,
		Args:        c.Args,
		Env:         s.pol.Env(),
		LandlockABI: s.caps.LandlockABI,
		Landlock:    s.os.landlock,
		Limits:      s.pol.Limits,
		Mech:        s.mech,
		Timeout:     c.Timeout,
		Probe:       probe,
	})
	if err != nil {
		return Result{}, bug(err)
	}

	var cg *cmdCgroup
	if s.os.cgroups != nil {
		cg, err = s.os.cgroups.create(s.pol.Limits, s.mech)
		if err != nil {
			return Result{}, &SetupError{Op: "cgroup", Err: err.Error()}
		}
		defer func() {
			if cg != nil {
				cg.remove()
			}
		}()
	}

	specR, specW, err := os.Pipe()
	if err != nil {
		return Result{}, &SetupError{Op: "pipe", Err: err.Error()}
	}
	repR, repW, err := os.Pipe()
	if err != nil {
		specR.Close()
		specW.Close()
		return Result{}, &SetupError{Op: "pipe", Err: err.Error()}
	}
	stdout, stdoutDone, err := outputPipe(c.Stdout)
	if err != nil {
		specR.Close()
		specW.Close()
		repR.Close()
		repW.Close()
		return Result{}, &SetupError{Op: "pipe", Err: err.Error()}
	}
	stderr, stderrDone, err := outputPipe(c.Stderr)
	if err != nil {
		specR.Close()
		specW.Close()
		repR.Close()
		repW.Close()
		closeIfPipe(stdout, c.Stdout)
		return Result{}, &SetupError{Op: "pipe", Err: err.Error()}
	}
	cmd := &exec.Cmd{
		Path:       "/proc/self/exe",
		Args:       []string{"nanosandbox-mcp: sandbox"},
		Env:        []string{childEnv + "=helper"},
		Stdin:      c.Stdin,
		Stdout:     stdout,
		Stderr:     stderr,
		ExtraFiles: []*os.File{specR, repW},
		WaitDelay:  waitDelay,
		SysProcAttr: &syscall.SysProcAttr{
			Cloneflags:                 namespaceFlags,
			UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: s.os.uid, Size: 1}},
			GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: s.os.gid, Size: 1}},
			GidMappingsEnableSetgroups: false,
			Setsid:                     true,
			Pdeathsig:                  syscall.SIGKILL,
		},
	}
	if cg != nil {
		// Born in its cgroup (CLONE_INTO_CGROUP): nothing runs outside it.
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = cg.fd
	}

	// Pdeathsig follows the thread that forked, not the process: start and
	// wait on one locked thread, so the helper dies with the server and not
	// with whichever thread happened to fork it.
	started := make(chan error, 1)
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		done <- cmd.Wait()
	}()
	err = <-started
	specR.Close()
	repW.Close()
	closeIfPipe(stdout, c.Stdout) // the child holds its own copies
	closeIfPipe(stderr, c.Stderr)
	if err != nil {
		specW.Close()
		repR.Close()
		why, fix := diagnoseUserNS(err)
		return Result{}, &SetupError{Op: "create namespaces", Err: why + "; to fix: " + fix}
	}
	go func() {
		specW.Write(raw)
		specW.Close()
	}()
	reports := make(chan []report, 1)
	go func() {
		defer repR.Close()
		var rs []report
		sc := bufio.NewScanner(repR)
		for sc.Scan() {
			var r report
			if json.Unmarshal(sc.Bytes(), &r) == nil {
				rs = append(rs, r)
			}
		}
		reports <- rs
	}()

	var timeout <-chan time.Time
	if c.Timeout > 0 {
		t := time.NewTimer(c.Timeout + timeoutGrace)
		defer t.Stop()
		timeout = t.C
	}
	if c.Signals != nil {
		stopSignals := make(chan struct{})
		defer close(stopSignals)
		go func() {
			for {
				select {
				case sig := <-c.Signals:
					cmd.Process.Signal(sig) // the helper passes it on to the program
				case <-stopSignals:
					return
				}
			}
		}()
	}
	var res Result
	var waitErr error
	select {
	case waitErr = <-done:
	case <-timeout:
		res.TimedOut = true
		cmd.Process.Kill() // pid 1 of the namespace: the kernel kills the rest
		waitErr = <-done
	case <-ctx.Done():
		res.Canceled = true
		cmd.Process.Kill()
		waitErr = <-done
	}
	rs := <-reports
	// Everything that held the pipes died with the pid namespace: the
	// readers reach EOF. (waitDelay bounds it should something not have.)
	waitOutput(stdoutDone, stderrDone)
	res.Notes = append(res.Notes, quarantineNested(gits, hostFS{})...)
	res.Duration = time.Since(began)
	var cgo cgroupOutcome
	if cg != nil {
		cgo = cg.finish()
		cg = nil
		res.MemoryPeakBytes = cgo.memoryPeak
	}

	for _, r := range rs {
		switch {
		case r.Setup != nil:
			return res, r.Setup
		case r.Start != nil:
			return res, r.Start
		}
	}
	switch {
	case cgo.oomKilled:
		res.Limit = fmt.Sprintf("memory limit %s (cgroup)", policy.FormatSize(s.pol.Limits.MemoryBytes))
	case cgo.pidsAtMax:
		res.Limit = fmt.Sprintf("process limit %d (cgroup)", s.pol.Limits.MaxProcesses)
	}
	for _, r := range rs {
		if r.Exit != nil {
			res.ExitCode = r.Exit.Code
			if r.Exit.Signal != 0 {
				res.ExitCode = -1
				res.SignalNo = r.Exit.Signal
				res.Signal = unix.SignalName(syscall.Signal(r.Exit.Signal))
			}
			res.TimedOut = res.TimedOut || r.Exit.TimedOut
			if res.Limit == "" {
				res.Limit = r.Exit.Limit
			}
			if res.MemoryPeakBytes == 0 {
				res.MemoryPeakBytes = r.Exit.MaxRSS
			}
			return res, nil
		}
	}
	// No report: killed by us, or the helper died.
	res.ExitCode = -1
	if res.TimedOut || res.Canceled {
		res.SignalNo = int(syscall.SIGKILL)
		res.Signal = "SIGKILL"
		return res, nil
	}
	return res, &SetupError{Op: "sandbox helper", Err: describeExit(waitErr)}
}

// pipeSize is the capacity asked for the output pipes: a command that
// prints a lot then writes in large steps instead of 64 KiB ones.
const pipeSize = 1 << 20

// outputPipe returns what to give the helper as stdout or stderr. An
// *os.File (or nil) is passed as it is; any other writer gets a pipe with a
// large buffer, drained by a goroutine in large reads, done when it closes.
func outputPipe(w io.Writer) (*os.File, <-chan struct{}, error) {
	if w == nil {
		return nil, nil, nil
	}
	if f, ok := w.(*os.File); ok {
		return f, nil, nil
	}
	r, pw, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	unix.FcntlInt(pw.Fd(), unix.F_SETPIPE_SZ, pipeSize) // best effort: the default works, slower
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer r.Close()
		buf := make([]byte, pipeSize)
		for {
			n, err := r.Read(buf)
			if n > 0 {
				w.Write(buf[:n])
			}
			if err != nil {
				return
			}
		}
	}()
	return pw, done, nil
}

// closeIfPipe closes f when outputPipe made it, not when it was the
// caller's own file.
func closeIfPipe(f *os.File, w io.Writer) {
	if f != nil && f != w {
		f.Close()
	}
}

// waitOutput waits for the output readers, at most waitDelay.
func waitOutput(done ...<-chan struct{}) {
	deadline := time.After(waitDelay)
	for _, d := range done {
		if d == nil {
			continue
		}
		select {
		case <-d:
		case <-deadline:
			return
		}
	}
}

func describeExit(err error) string {
	if err == nil {
		return "exited without a report"
	}
	if ee, ok := err.(*exec.ExitError); ok {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "killed by " + unix.SignalName(ws.Signal())
		}
		return fmt.Sprintf("exited with status %d without a report", ee.ExitCode())
	}
	return strings.TrimPrefix(err.Error(), "exec: ")
}

// bug marks a state that cannot happen, so it reads as ours to fix.
func bug(err error) error {
	return fmt.Errorf("bug in nanosandbox-mcp (please report): %w", err)
}
