package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// namespaceFlags are the helper's new namespaces (DESIGN.md §3).
const namespaceFlags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID |
	syscall.CLONE_NEWNET | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS | syscall.CLONE_NEWCGROUP

// waitDelay bounds how long output is awaited after the helper is gone;
// nothing should hold the pipes then, since the pid namespace died with it.
const waitDelay = 2 * time.Second

// helperProc is a sandbox helper started in its namespaces (and cgroup),
// waiting for its spec. Until the spec comes nothing is mounted and nothing
// of a call is in it, so the server keeps one started ahead of the next
// call: starting it is most of a call's cost (a full fork of the server,
// since a new user namespace rules out vfork, then a Go start-up).
type helperProc struct {
	// mountGen is the sandbox's count of mount table changes when the
	// helper started, before it copied the table.
	mountGen uint64
	cmd      *exec.Cmd
	cg       *cmdCgroup // nil unless limits are held by cgroup v2
	specW    *os.File
	repR     *os.File
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
	// netConn is the server's end of the socket on which the helper hands
	// over the proxy's listening socket; nil when the network is the
	// host's, or once the call's proxy took it.
	netConn *os.File
	// reduced is set for a helper without namespaces, which kills what
	// its call left itself (stop).
	reduced bool
	// ccall is set for the helper in C, once it is handed its call: its
	// reports are binary records, which ccall decodes.
	ccall *cHelperCall
}

// stopGrace is how long a helper without namespaces has to kill its
// call's processes when asked, before it is killed itself.
const stopGrace = 3 * time.Second

// stop ends the helper and every process of its call. Killing pid 1 of
// the sandbox's namespaces kills them all; a helper without namespaces is
// asked with SIGUSR2 to kill them (it is their subreaper), and killed if
// it has not ended in stopGrace.
func (h *helperProc) stop() {
	if !h.reduced {
		h.cmd.Process.Kill()
		return
	}
	h.cmd.Process.Signal(unix.SIGUSR2)
	go func() {
		select {
		case <-h.exited:
		case <-time.After(stopGrace):
			h.cmd.Process.Kill()
		}
	}()
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
func (s *linuxSandbox) startHelper(c *Command) (_ *helperProc, err error) {
	h := &helperProc{exited: make(chan struct{}), reduced: s.reduced, mountGen: s.mountGen.Load()}
	defer func() {
		if err != nil {
			h.discard() // h itself: the result is nil by now
		}
	}()
	if s.cgroups != nil {
		if h.cg, err = s.cgroups.create(s.pol.Limits, s.mech); err != nil {
			return nil, setupError("cgroup", err)
		}
	}
	var childEnds []*os.File // closed once the helper holds its copies
	defer func() { closeAll(childEnds) }()
	pipe := func() (r, w *os.File, err error) {
		if r, w, err = os.Pipe(); err != nil {
			return nil, nil, setupError("pipe", err)
		}
		if err := s.root.own(r); err != nil {
			r.Close()
			w.Close()
			return nil, nil, setupError("pipe", err)
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
	var netEnd *os.File // stays nil, closed in the helper, on the host's network
	flags := uintptr(namespaceFlags)
	switch {
	case s.reduced:
		flags = 0 // no proxy either: --allow-net is refused without namespaces
	case s.pol.HostNetwork:
		flags &^= syscall.CLONE_NEWNET
	default:
		if h.netConn, netEnd, err = netPair(); err != nil {
			return nil, setupError("proxy socket", err)
		}
		childEnds = append(childEnds, netEnd)
	}

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
		Args:       []string{"nanosandbox-mcp: sandbox", strconv.Itoa(s.uid), strconv.Itoa(s.gid)},
		Env:        []string{childEnv + "=helper"},
		ExtraFiles: []*os.File{specR, repW, netEnd},
		WaitDelay:  waitDelay,
		SysProcAttr: &syscall.SysProcAttr{
			Cloneflags:                 flags,
			UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: s.uid, Size: 1}},
			GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: s.gid, Size: 1}},
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
	if s.reduced {
		// Without namespaces: the caller's own ids, and on the server's
		// death a signal the helper catches, to kill what its call left.
		h.cmd.Env = []string{childEnv + "=reduced"}
		h.cmd.SysProcAttr.UidMappings, h.cmd.SysProcAttr.GidMappings = nil, nil
		h.cmd.SysProcAttr.Pdeathsig = unix.SIGUSR2
	}
	if s.root != nil {
		trees, err := s.root.helper(h.cmd)
		if err != nil {
			return nil, setupError("idmapped mounts", err)
		}
		childEnds = append(childEnds, trees...)
	}
	var startBlock []byte
	if s.cHelper && !s.reduced {
		// The helper in C instead of this binary (chelper_linux.go): the
		// exec stage's memfd, then its own, after every descriptor at a
		// fixed number; it is executed from its number in the child.
		// It is given its start block at once, and started in none of
		// the sandbox's namespaces: it makes them itself.
		l, err := takeLaunch(h.cmd.SysProcAttr)
		if err != nil {
			return nil, err
		}
		if startBlock, err = s.cHelperStartBlock(l); err != nil {
			return nil, err
		}
		stage := 3 + len(h.cmd.ExtraFiles)
		if stage != s.cHelperStageFD() {
			return nil, bug(fmt.Errorf("the helper in C has its exec stage at %d, want %d", stage, s.cHelperStageFD()))
		}
		h.cmd.ExtraFiles = append(h.cmd.ExtraFiles, cStageFile(), cHelperFile())
		h.cmd.Path = "/proc/self/fd/" + strconv.Itoa(stage+1)
		h.cmd.Env = []string{}
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
		return nil, helperStartFailed(err, s.reduced)
	}
	if startBlock != nil {
		// The pipe holds it (a few hundred bytes): this does not wait.
		if _, err := h.specW.Write(startBlock); err != nil {
			return nil, setupError("start the sandbox helper", err)
		}
	}
	return h, nil
}

// helperStartFailed is how a helper that could not be started reads,
// whether the server's fork of it failed or, for the helper in C, its
// launch into the namespaces (launchError): the caller's process limit
// where it is full, else, with namespaces, why this machine refuses them.
func helperStartFailed(err error, reduced bool) *SetupError {
	if errors.Is(err, syscall.EAGAIN) {
		if why := processLimitReached(); why != "" {
			return &SetupError{Op: "start the sandbox helper", Err: strings.TrimPrefix(err.Error(), "fork/exec /proc/self/exe: ") + ": " + why, Errno: errnoOf(err)}
		}
	}
	if reduced {
		return setupError("start the sandbox helper", err)
	}
	why, fix := diagnoseUserNS(err)
	return &SetupError{Op: "create namespaces", Err: "cannot create user namespaces: " + why, Fix: fix, Errno: errnoOf(err)}
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
			buf := drainBuffer()
			defer keepDrainBuffer(buf)
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
		tookFn := func() {
			if !taken {
				close(took)
			}
			taken = true
		}
		var rs []report
		if h.ccall != nil {
			rs = readCReports(repR, h.ccall, tookFn)
		} else {
			rs = readReports(repR, tookFn)
		}
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
		h.stop()
		<-h.exited
		h.cmd = nil
	}
	for _, f := range []**os.File{&h.specW, &h.repR, &h.stdinW, &h.stdoutR, &h.stderrR, &h.netConn} {
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

// pipeSize is the capacity asked for the output pipes: a command that
// prints a lot then writes in large steps instead of 64 KiB ones.
const pipeSize = 1 << 20

// drainBuffers keeps a few of the buffers output is read into, a pipe's
// size each, between calls: two fresh ones per call cost the server page
// faults and a garbage collection every other call. A few only: a burst of
// concurrent calls must not leave its buffers resident in an idle server.
// The writers they are given copy what they keep (io.Writer's contract).
var drainBuffers = make(chan []byte, 4)

// drainBuffer returns a kept buffer, or a new one.
func drainBuffer() []byte {
	select {
	case b := <-drainBuffers:
		return b
	default:
		return make([]byte, pipeSize)
	}
}

// keepDrainBuffer keeps b for a later call, if there is room.
func keepDrainBuffer(b []byte) {
	select {
	case drainBuffers <- b:
	default:
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
