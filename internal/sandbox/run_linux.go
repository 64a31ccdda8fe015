package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nanosandbox/nanosandbox-mcp/internal/gitguard"
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
	guard    *gitguard.Guard
	root     *rootCaller // nil unless the caller is root (rootcaller_linux.go)

	// A helper started ahead of the next call, when the server asked for
	// one (keepSpare); spareStarting is closed when the one being started
	// is ready.
	spareMu       sync.Mutex
	keepSpare     bool
	spare         *helperProc
	spareStarting chan struct{}
}

func (s *Sandbox) prepare() error {
	s.os.uid, s.os.gid = os.Getuid(), os.Getgid()
	if s.os.uid == 0 {
		r, err := newRootCaller(s.pol)
		if err != nil {
			return err
		}
		s.os.root = r
	}
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
	if err := checkWritable(s.pol, s.os.uid, s.os.gid); err != nil {
		return err
	}
	s.os.static = planStatic(s.pol, hostFS{})
	if err := checkAliasGrants(s.pol, s.os.static.homeAliases); err != nil {
		return err
	}
	writable := append([]string{"/dev/shm"}, s.os.static.writable...)
	s.os.landlock = landlockRules{
		ReadOnly: []string{"/"},
		Writable: writable,
		Devices:  []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx", "/dev/pts"},
	}
	return s.startGuard()
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
	// Git first: what a call may not change is fixed before it starts, and
	// what it changed is judged once all of it is gone, before its result
	// (and before anything else).
	git, err := s.os.guard.Begin()
	if err != nil {
		return Result{}, &SetupError{Op: "git protection", Err: err.Error()}
	}
	var gitNotes []string
	gitEnded := false
	endGit := func() {
		switch {
		case gitEnded:
		case probe:
			git.EndQuietly() // its notes go to the first call
		default:
			gitNotes = git.End()
		}
		gitEnded = true
	}
	defer endGit()

	raw, err := json.Marshal(spec{
		Ops:         planCall(s.pol, s.os.static, gitOps(git.Protect), hostFS{}),
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

	// A spare that died while it waited never took the call: the call
	// goes to a helper started now instead.
	var h *helperProc
	if piped(c) {
		h = s.os.takeSpare()
	}
	if h != nil && !h.hand(ctx, raw) {
		go h.discard()
		h = nil
	}
	if h == nil {
		if h, err = s.startHelper(c); err != nil {
			return Result{}, err
		}
		h.hand(ctx, raw) // a fresh one that fails reports why, or its exit says
	}
	defer func() {
		h.discard()
		// The next spare is started once this call is over, not beside
		// it: on a busy machine the two would slow each other down.
		go s.refillSpare()
	}()
	stdoutDone, stderrDone := h.attach(c)
	cmd := h.cmd

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
	case <-h.exited:
	case <-timeout:
		res.TimedOut = true
		cmd.Process.Kill() // pid 1 of the namespace: the kernel kills the rest
	case <-ctx.Done():
		res.Canceled = true
		cmd.Process.Kill()
	}
	<-h.exited
	waitErr = h.waitErr
	rs := <-h.reports
	// Everything that held the pipes died with the pid namespace: the
	// readers reach EOF. (waitDelay bounds it should something not have.)
	waitOutput(stdoutDone, stderrDone)
	endGit()
	res.Notes = append(res.Notes, gitNotes...)
	res.Duration = time.Since(began)
	var cgo cgroupOutcome
	if h.cg != nil {
		cgo = h.cg.finish()
		h.cg = nil
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
	if err := endedBeforeReady(rs); err != nil {
		return res, err
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

// endedBeforeReady returns the setup failure that an exit reported before
// the exec stage was ready is: the exec stage ended (the Go runtime aborts
// with status 2 when it cannot make a thread) before it ran the command,
// whose status that is not. Otherwise nil.
func endedBeforeReady(rs []report) *SetupError {
	for _, r := range rs {
		switch {
		case r.Ready:
			return nil
		case r.Exit != nil && !r.Exit.TimedOut:
			msg := fmt.Sprintf("ended with status %d before it ran the command", r.Exit.Code)
			if r.Exit.Signal != 0 {
				msg = "killed by " + unix.SignalName(syscall.Signal(r.Exit.Signal)) + " before it ran the command"
			}
			if why := processLimitReached(); why != "" {
				msg += ": " + why
			}
			return &SetupError{Op: "exec stage", Err: msg}
		}
	}
	return nil
}

// helperProc is a sandbox helper started in its namespaces (and cgroup),
// waiting for its spec. Until the spec comes nothing is mounted and nothing
// of a call is in it, so the server keeps one started ahead of the next
// call: starting it is most of a call's cost (a full fork of the server,
// since a new user namespace rules out vfork, then a Go start-up).
type helperProc struct {
	cmd   *exec.Cmd
	cg    *cmdCgroup // nil unless limits are held by cgroup v2
	specW *os.File
	repR  *os.File
	// reports delivers what the helper reported once it is gone (after
	// hand).
	reports chan []report
	// exited is closed once the helper has been waited for, with
	// waitErr what cmd.Wait returned.
	exited  chan struct{}
	waitErr error
	// The server's ends of the helper's stdio when it was started with
	// pipes; nil when it was given the caller's own files.
	stdinW, stdoutR, stderrR *os.File
}

// piped reports whether c needs its stdio through pipes the server
// serves, rather than files passed to the helper as they are.
func piped(c *Command) bool {
	_, in := c.Stdin.(*os.File)
	_, out := c.Stdout.(*os.File)
	_, errOut := c.Stderr.(*os.File)
	return !(in || c.Stdin == nil) || !(out || c.Stdout == nil) || !(errOut || c.Stderr == nil)
}

// startHelper starts a helper for c: with c's own files as its stdio, or
// with pipes when c needs them (c nil: pipes, for a spare).
func (s *Sandbox) startHelper(c *Command) (_ *helperProc, err error) {
	h := &helperProc{exited: make(chan struct{})}
	defer func() {
		if err != nil {
			h.discard() // h itself: the result is nil by now
		}
	}()
	if s.os.cgroups != nil {
		if h.cg, err = s.os.cgroups.create(s.pol.Limits, s.mech); err != nil {
			return nil, &SetupError{Op: "cgroup", Err: err.Error()}
		}
	}
	var childEnds []*os.File // closed once the helper holds its copies
	defer func() {
		for _, f := range childEnds {
			f.Close()
		}
	}()
	pipe := func() (r, w *os.File, err error) {
		if r, w, err = os.Pipe(); err != nil {
			return nil, nil, &SetupError{Op: "pipe", Err: err.Error()}
		}
		if err := s.os.root.own(r); err != nil {
			r.Close()
			w.Close()
			return nil, nil, &SetupError{Op: "pipe", Err: err.Error()}
		}
		return r, w, nil
	}
	var specR, repW *os.File
	if specR, h.specW, err = pipe(); err != nil {
		return nil, err
	}
	childEnds = append(childEnds, specR)
	if h.repR, repW, err = pipe(); err != nil {
		return nil, err
	}
	childEnds = append(childEnds, repW)

	var stdio [3]*os.File
	if c == nil || piped(c) {
		if stdio[0], h.stdinW, err = pipe(); err != nil {
			return nil, err
		}
		if h.stdoutR, stdio[1], err = pipe(); err != nil {
			return nil, err
		}
		if h.stderrR, stdio[2], err = pipe(); err != nil {
			return nil, err
		}
		childEnds = append(childEnds, stdio[:]...)
		for _, w := range stdio[1:] {
			unix.FcntlInt(w.Fd(), unix.F_SETPIPE_SZ, pipeSize) // best effort: the default works, slower
		}
	} else {
		stdio[0], _ = c.Stdin.(*os.File)
		stdio[1], _ = c.Stdout.(*os.File)
		stdio[2], _ = c.Stderr.(*os.File)
	}
	h.cmd = &exec.Cmd{
		Path:       "/proc/self/exe",
		Args:       []string{"nanosandbox-mcp: sandbox", strconv.Itoa(s.os.uid), strconv.Itoa(s.os.gid)},
		Env:        []string{childEnv + "=helper"},
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
	// exec.Cmd takes a nil *os.File inside an interface for a file.
	if stdio[0] != nil {
		h.cmd.Stdin = stdio[0]
	}
	if stdio[1] != nil {
		h.cmd.Stdout = stdio[1]
	}
	if stdio[2] != nil {
		h.cmd.Stderr = stdio[2]
	}
	if s.os.root != nil {
		trees, err := s.os.root.helper(h.cmd)
		if err != nil {
			return nil, &SetupError{Op: "idmapped mounts", Err: err.Error()}
		}
		childEnds = append(childEnds, trees...)
	}
	if h.cg != nil {
		// Born in its cgroup (CLONE_INTO_CGROUP): nothing runs outside it.
		h.cmd.SysProcAttr.UseCgroupFD = true
		h.cmd.SysProcAttr.CgroupFD = h.cg.fd
	}

	// Pdeathsig follows the thread that forked, not the process: start and
	// wait on one locked thread, so the helper dies with the server and not
	// with whichever thread happened to fork it.
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := h.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		h.waitErr = h.cmd.Wait()
		close(h.exited)
	}()
	if err := <-started; err != nil {
		h.cmd = nil
		if errors.Is(err, syscall.EAGAIN) {
			if why := processLimitReached(); why != "" {
				return nil, &SetupError{Op: "start the sandbox helper", Err: strings.TrimPrefix(err.Error(), "fork/exec /proc/self/exe: ") + ": " + why}
			}
		}
		why, fix := diagnoseUserNS(err)
		return nil, &SetupError{Op: "create namespaces", Err: why + "; to fix: " + fix}
	}
	return h, nil
}

// attach connects a piped helper to c: c's stdin is copied in, and its
// output drained out in large reads. The channels close when the output
// ends (nil for a stream not piped).
func (h *helperProc) attach(c *Command) (stdoutDone, stderrDone <-chan struct{}) {
	if h.stdinW != nil {
		w := h.stdinW
		h.stdinW = nil
		if c.Stdin == nil {
			w.Close()
		} else {
			go func() {
				io.Copy(w, c.Stdin) // ends with an error once nothing can read
				w.Close()
			}()
		}
	}
	drain := func(r *os.File, w io.Writer) <-chan struct{} {
		if r == nil {
			return nil
		}
		if w == nil {
			w = io.Discard
		}
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
		return done
	}
	stdoutDone, stderrDone = drain(h.stdoutR, c.Stdout), drain(h.stderrR, c.Stderr)
	h.stdoutR, h.stderrR = nil, nil
	return stdoutDone, stderrDone
}

// hand gives the helper its spec, starts reading its reports, and waits
// until it has taken the spec (a few hundred microseconds: it reads nothing
// else first). It returns false if the helper ended without taking it, or
// ctx ended.
func (h *helperProc) hand(ctx context.Context, raw []byte) bool {
	// The pipe holds the spec (64 KiB; a spec is a few, unless the call
	// brings long arguments, which the helper, reading it first thing,
	// takes at once): this does not wait, and fails at once if the helper
	// is long gone.
	_, err := h.specW.Write(raw)
	h.specW.Close()
	h.specW = nil
	took := make(chan struct{})
	reports := make(chan []report, 1)
	h.reports = reports
	go func(repR *os.File) {
		taken := false
		rs := readReports(repR, func() {
			if !taken {
				close(took)
			}
			taken = true
		})
		reports <- rs
	}(h.repR)
	if err != nil {
		return false
	}
	select {
	case <-took:
		return true
	case <-h.exited:
		// Its reports are all read once it is gone; then whether it
		// took the spec is known. (One that took it may have run the
		// command already: never hand that call to another.)
		rs := <-h.reports
		h.reports <- rs
		select {
		case <-took:
			return true
		default:
			return false
		}
	case <-ctx.Done():
		return true // the call ends as cancelled, with this helper killed
	}
}

// alive reports whether the helper is still waiting; one that died while
// it waited must not be handed a call.
func (h *helperProc) alive() bool {
	select {
	case <-h.exited:
		return false
	default:
		return true
	}
}

// discard kills the helper if it still runs, waits for it, and releases
// what it held. It is safe to call more than once.
func (h *helperProc) discard() {
	if h.cmd != nil && h.cmd.Process != nil {
		h.cmd.Process.Kill() // pid 1 of its namespace: the kernel kills the rest
		<-h.exited
		h.cmd = nil
	}
	for _, f := range []**os.File{&h.specW, &h.repR, &h.stdinW, &h.stdoutR, &h.stderrR} {
		if *f != nil {
			(*f).Close()
			*f = nil
		}
	}
	if h.cg != nil {
		h.cg.remove()
		h.cg = nil
	}
}

// takeSpare returns the helper started ahead, waiting for it if it is
// being started (it is further along than a helper started now would be),
// or nil.
func (o *osState) takeSpare() *helperProc {
	o.spareMu.Lock()
	if o.spare == nil && o.spareStarting != nil {
		starting := o.spareStarting
		o.spareMu.Unlock()
		<-starting
		o.spareMu.Lock()
	}
	h := o.spare
	o.spare = nil
	o.spareMu.Unlock()
	if h != nil && !h.alive() {
		go h.discard()
		return nil
	}
	return h
}

// refillSpare starts a helper for the next call, unless one is ready or
// being started, or the sandbox keeps none.
func (s *Sandbox) refillSpare() {
	o := &s.os
	o.spareMu.Lock()
	if !o.keepSpare || o.spare != nil || o.spareStarting != nil {
		o.spareMu.Unlock()
		return
	}
	starting := make(chan struct{})
	o.spareStarting = starting
	o.spareMu.Unlock()

	// On failure the next call starts its own helper, and reports why if
	// that fails too (namespaces or processes may be back by then).
	h, _ := s.startSpare()

	o.spareMu.Lock()
	o.spareStarting = nil
	close(starting)
	if !o.keepSpare {
		o.spareMu.Unlock()
		if h != nil {
			h.discard()
		}
		return
	}
	o.spare = h
	o.spareMu.Unlock()
}

// startSpare starts a helper for no call yet. It runs on a goroutine of
// its own, where a panic would end the server: it becomes an error.
func (s *Sandbox) startSpare() (h *helperProc, err error) {
	defer func() {
		if r := recover(); r != nil {
			h, err = nil, bug(fmt.Errorf("start a spare helper: %v", r))
		}
	}()
	return s.startHelper(nil)
}

func (s *Sandbox) keepSpare() {
	// A server makes many calls: keep the writable roots watched, so that
	// git protection costs each call what changed, not what exists.
	if err := s.os.guard.Watch(); err != nil {
		slog.Warn("git guard: " + err.Error())
	}
	// The threads calls need, made now: while commands hold every process
	// the caller may have, the runtime could make none, and it aborts.
	prewarmThreads(serverThreads(s.pol.MaxConcurrent))
	s.os.spareMu.Lock()
	s.os.keepSpare = true
	s.os.spareMu.Unlock()
	go s.refillSpare()
}

func (s *Sandbox) close() {
	s.os.spareMu.Lock()
	s.os.keepSpare = false
	s.os.spareMu.Unlock()
	if h := s.os.takeSpare(); h != nil {
		h.discard()
	}
}

// pipeSize is the capacity asked for the output pipes: a command that
// prints a lot then writes in large steps instead of 64 KiB ones.
const pipeSize = 1 << 20

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
	msg := strings.TrimPrefix(fmt.Sprint(err), "exec: ")
	if err == nil {
		msg = "exited without a report"
	}
	if ee, ok := err.(*exec.ExitError); ok {
		msg = fmt.Sprintf("exited with status %d without a report", ee.ExitCode())
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			msg = "killed by " + unix.SignalName(ws.Signal())
		}
	}
	// A helper that cannot make a thread aborts with status 2 (the Go
	// runtime), having said so on the command's stderr.
	if why := processLimitReached(); why != "" {
		msg += ": " + why
	}
	return msg
}

// bug marks a state that cannot happen, so it reads as ours to fix.
func bug(err error) error {
	return fmt.Errorf("bug in nanosandbox-mcp (please report): %w", err)
}
