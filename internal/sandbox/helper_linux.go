package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
)

// helperMain is pid 1 of the sandbox's namespaces, uid 0 in its own user
// namespace. It builds the mount tree, brings up loopback, starts the exec
// stage in a nested user namespace, forwards signals and reaps. When the
// command exits it reports and exits, and the kernel kills whatever is left
// in the pid namespace. Any step that fails reports why and exits 255.
func helperMain() {
	h := &helper{rep: os.NewFile(reportFD, "report")}
	h.guardSelf()
	// A static binary (every release) starts its exec stage now too,
	// which then waits for its spec. A nested user namespace needs this
	// process's root to be its mount namespace's: the pivot into the
	// scratch root comes first. A dynamic one (a cgo build: go run on a
	// machine with a C compiler) needs its ELF interpreter, which the
	// scratch root lacks: its exec stage starts once the root is built.
	h.early = isStatic()
	h.enterScratch()
	if h.early {
		h.startStage()
	}
	h.takeCall()
	h.buildSandbox()
	if !h.early {
		h.startStage()
	}
	h.handOver()
	h.countTasks()
	h.enforceTimeout()
	h.forwardSignals()
	h.reap()
}

// helper is what helperMain's steps share.
type helper struct {
	rep   *os.File // reports to the server
	early bool     // the exec stage starts before the call comes
	// The exec stage, once started, and the pipe of its spec.
	stage        *os.Process
	specR, specW *os.File
	spec         *spec        // the call, once taken
	tasks        *taskCounter // nil unless the process limit reports nothing itself
	finished     sync.Once
	// reduced is set for the helper of a call without namespaces
	// (reducedhelper_linux.go); ending, once it kills what the call left.
	reduced bool
	ending  atomic.Bool
}

// fail reports err as the reason the sandbox could not be set up, and
// exits.
func (h *helper) fail(err error) {
	sendReport(h.rep, report{Setup: asSetupError(err)})
	os.Exit(255)
}

// guardSelf keeps the command away from this process, and makes the
// threads it will need while the command runs.
func (h *helper) guardSelf() {
	// Not dumpable: the command runs as the same host uid, and must not
	// read or write this process's memory, environment or descriptors
	// through /proc/1 (this process holds every capability of the outer
	// user namespace).
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		h.fail(fmt.Errorf("prctl(PR_SET_DUMPABLE): %w", err))
	}
	ignoreSignals()
	// Threads the helper will need are made now: once the command runs, a
	// fork bomb can leave no pid for a new one (pid_max and pids.max count
	// threads), and the Go runtime aborts when it cannot make a thread.
	// Idle threads are reused instead. (Before the spec, which a helper
	// started ahead of its call waits for.)
	prewarmThreads(spareThreads)
}

// ignoreSignals drops every signal this process does not use. Where
// Landlock cannot scope signals (below ABI 6), the command, the same host
// uid, may signal this process; the kernel drops what pid 1 of a pid
// namespace gets from inside it without a handler, but the Go runtime has
// one for every signal, and exits on SIGABRT, SIGQUIT or SIGHUP, or on a
// SIGSEGV sent by kill, with a stack dump on the command's stderr. Asked
// for on a channel nobody reads, they are dropped instead (a real fault
// still panics: only a signal sent by a process is delivered so). Not
// SIG_IGN: that would be inherited through exec by the exec stage and the
// command, where a handler is reset. SIGCHLD (reap), SIGURG and SIGPROF
// (the runtime's own) and the two the C library reserves stay as they
// are; forwardSignals and a reduced helper's SIGUSR2 ask for theirs again.
func ignoreSignals() {
	var sigs []os.Signal
	for s := unix.Signal(1); s <= 64; s++ {
		switch s {
		case unix.SIGKILL, unix.SIGSTOP, unix.SIGCHLD, unix.SIGURG, unix.SIGPROF, 32, 33:
			continue
		}
		sigs = append(sigs, s)
	}
	signal.Notify(make(chan os.Signal, 1), sigs...)
}

// enterScratch pivots into the scratch root, mounts a root caller's
// idmapped grants, and makes the exec stage's spec pipe.
func (h *helper) enterScratch() {
	if err := enterScratch(); err != nil {
		h.fail(err)
	}
	if err := attachIdmapped(); err != nil { // a root caller's grants, before anything starts
		h.fail(err)
	}
	var err error
	if h.specR, h.specW, err = os.Pipe(); err != nil {
		h.fail(fmt.Errorf("pipe: %w", err))
	}
}

// startStage starts the exec stage, which waits for its spec.
func (h *helper) startStage() {
	var err error
	if h.reduced {
		h.stage, err = startReducedStage(h.specR, h.rep)
	} else {
		h.stage, err = startExecStage(h.specR, h.rep)
	}
	h.specR.Close()
	if err != nil {
		h.fail(err)
	}
}

// takeCall reads the call's spec, which a helper started ahead of its call
// waits for, and tells the server it has it.
func (h *helper) takeCall() {
	s, _, err := readSpec()
	if err != nil {
		h.fail(err)
	}
	// An exec stage that ended while this helper waited cannot run the
	// call: end without taking it, and the server hands it to another.
	if h.early {
		var ws unix.WaitStatus
		if pid, _ := unix.Wait4(h.stage.Pid, &ws, unix.WNOHANG, nil); pid == h.stage.Pid {
			h.fail(errors.New("exec stage: it ended before its call"))
		}
	}
	sendReport(h.rep, report{Took: true})
	h.spec = s
}

// buildSandbox builds the call's mount tree and network (its loopback and
// the proxy's socket, handed to the server), and closes what the command
// must not inherit.
func (h *helper) buildSandbox() {
	s := h.spec
	moved := func(m movedAside) { sendReport(h.rep, report{Moved: &m}) }
	if err := buildRoot(s.Ops, s.Limits.TmpBytes, moved); err != nil {
		h.fail(err)
	}
	if !s.HostNetwork {
		if err := loopbackUp(); err != nil {
			h.fail(err)
		}
		// Before the command starts, so that its first connection finds
		// the proxy's socket; the server accepts once it has it.
		if err := listenProxy(); err != nil {
			h.fail(err)
		}
	}
	if s.Mech.Processes == ByPidNamespace {
		// Root is not bound by RLIMIT_NPROC; this namespace's pid_max is
		// (Linux 6.14+). See reservedPids for the margin.
		pidMax := strconv.Itoa(s.Limits.MaxProcesses + reservedPids)
		if err := os.WriteFile("/proc/sys/kernel/pid_max", []byte(pidMax), 0); err != nil {
			h.fail(fmt.Errorf("write /proc/sys/kernel/pid_max %s: %w", pidMax, unwrap(err)))
		}
	}
	if err := readOnlyProc(); err != nil { // after pid_max, the one sysctl written
		h.fail(err)
	}
	// Nothing inherited above the report pipe reaches the command (netFD
	// is closed by now).
	if err := unix.CloseRange(reportFD+1, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		h.fail(fmt.Errorf("close_range: %w", err))
	}
}

// handOver gives the exec stage its spec, with the root it must find
// itself in.
func (h *helper) handOver() {
	s := h.spec
	// An exec stage started early had its root moved by the pivots
	// (pivot_root moves every process whose root was the old one); it
	// checks that against this.
	var err error
	if s.Root, err = currentRoot(); err != nil {
		h.fail(err)
	}
	raw, err := json.Marshal(s)
	if err != nil {
		h.fail(bug(err))
	}
	if _, err := h.specW.Write(raw); err != nil {
		h.fail(fmt.Errorf("hand the exec stage its spec (did it end before the call?): %w", err))
	}
	h.specW.Close()
}

// countTasks starts counting the command's tasks when its process limit
// is one that reports nothing itself.
func (h *helper) countTasks() {
	s := h.spec
	if !s.Mech.countsTasks() {
		return
	}
	var err error
	if h.tasks, err = newTaskCounter(s.Limits.MaxProcesses); err != nil {
		h.fail(err)
	}
	go h.tasks.watch()
}

// enforceTimeout ends the call once its time is up.
func (h *helper) enforceTimeout() {
	if h.spec.Timeout > 0 {
		time.AfterFunc(h.spec.Timeout, func() {
			h.finish(&exitReport{Code: -1, Signal: int(unix.SIGKILL), TimedOut: true, Limit: h.limitReached(nil, nil)})
		})
	}
}

// forwardSignals passes the signals this process gets on to the command.
func (h *helper) forwardSignals() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT)
	go func() {
		for sig := range sigs {
			h.stage.Signal(sig)
		}
	}()
}

// reap waits for every process reparented to this one, until the command
// exits; then it reports how, and ends the call. It never returns.
func (h *helper) reap() {
	for {
		var ws unix.WaitStatus
		var ru unix.Rusage
		pid, err := unix.Wait4(-1, &ws, 0, &ru)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if h.ending.Load() {
			select {} // finish reaps what is left, and exits
		}
		if err != nil {
			h.fail(fmt.Errorf("wait4: %w", err))
		}
		if pid != h.stage.Pid { // an orphan reparented to us
			if h.tasks != nil {
				h.tasks.sampleAfter(200 * time.Microsecond)
			}
			continue
		}
		er := &exitReport{MaxRSS: ru.Maxrss * 1024}
		er.setStatus(ws)
		er.Limit = h.limitReached(&ws, &ru)
		h.finish(er)
		select {} // finish exits; a timeout may be exiting already
	}
}

// finish reports how the command ended, once, and exits: the kernel kills
// what is left in the pid namespace. Without namespaces the helper kills
// it first.
func (h *helper) finish(er *exitReport) {
	h.finished.Do(func() {
		if h.reduced {
			h.ending.Store(true)
			killDescendants()
		}
		sendReport(h.rep, report{Exit: er})
		os.Exit(0)
	})
}

// isStatic reports whether this binary runs without an ELF interpreter:
// the kernel then gives it no interpreter's base address (AT_BASE 0 in its
// auxiliary vector), which the Go runtime keeps. Where the vector cannot be
// read it answers false, the later, always-working order. (It read the
// binary's program headers before, a file parse at every helper start.)
func isStatic() bool {
	const atBase = 7 // AT_BASE, linux/auxvec.h
	auxv, err := unix.Auxv()
	if err != nil {
		return false
	}
	for _, kv := range auxv {
		if kv[0] == atBase {
			return kv[1] == 0
		}
	}
	return false
}

// startExecStage starts the exec stage in a nested user namespace that maps
// the caller (this process's arguments: uid, gid) back. It reads its spec
// from specR, and reports on rep. It runs after enterScratch.
func startExecStage(specR, rep *os.File) (*os.Process, error) {
	uid, gid, err := helperIDs()
	if err != nil {
		return nil, err
	}
	proc, err := os.StartProcess("/proc/self/exe", []string{"nanosandbox-mcp: exec"}, &os.ProcAttr{
		Dir:   "/",
		Env:   []string{childEnv + "=exec"},
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr, specR, rep},
		Sys:   nestedUserNS(uid, gid),
	})
	if err != nil {
		return nil, fmt.Errorf("start exec stage: %w", err)
	}
	return proc, nil
}

// limitReached finds the limit that stopped the command, from how it ended
// (ws, ru: nil on a timeout) and what is left in the sandbox: a signal
// that only a limit sends, a process count at its limit, a full tmpfs, or a
// failure at a peak near the per-process memory limit; or returns nil.
// Limits held by a cgroup are read from the cgroup by the server instead.
func (h *helper) limitReached(ws *unix.WaitStatus, ru *unix.Rusage) *limitHit {
	l, m := h.spec.Limits, h.spec.Mech
	peak := 0
	if m.countsTasks() && h.tasks != nil {
		peak = h.tasks.peak()
	}
	full := ""
	if m.Tmp != NoLimit {
		for _, d := range append(append([]string(nil), policy.PrivateDirs...), "/dev/shm") {
			var st unix.Statfs_t
			if unix.Statfs(d, &st) == nil && st.Type == unix.TMPFS_MAGIC && st.Blocks > 0 && st.Bavail*100 < st.Blocks {
				full = d
				break
			}
		}
	}
	var maxRSS int64
	if ru != nil {
		maxRSS = ru.Maxrss * 1024
	}
	return limitVerdict(l, m, ws, maxRSS, peak, full)
}

// limitVerdict is limitReached's rule, from the facts it gathers (and the
// helper in C reports): how the command ended (ws: nil on a timeout), its
// peak RSS in bytes, the most tasks counted (0: not counted), and the
// tmpfs found full ("": none).
func limitVerdict(l policy.Limits, m Mechanisms, ws *unix.WaitStatus, maxRSS int64, taskPeak int, fullTmp string) *limitHit {
	// The signal that ended the program, or the one a shell reports as
	// its status 128+N.
	var sig unix.Signal
	switch {
	case ws != nil && ws.Signaled():
		sig = ws.Signal()
	case ws != nil && ws.Exited() && ws.ExitStatus() > 128:
		sig = unix.Signal(ws.ExitStatus() - 128)
	}
	switch {
	case sig == unix.SIGXCPU && m.CPUTime != NoLimit:
		return &limitHit{Kind: cpuTimeLimit, Mech: m.CPUTime}
	case sig == unix.SIGXFSZ && m.FileSize != NoLimit:
		return &limitHit{Kind: fileSizeLimit, Mech: m.FileSize}
	}
	if m.countsTasks() && taskPeak > 0 && taskPeak*10 >= l.MaxProcesses*9 {
		return &limitHit{Kind: processLimit, Mech: m.Processes}
	}
	if m.Tmp != NoLimit && fullTmp != "" {
		return &limitHit{Kind: tmpLimit, Mech: m.Tmp, Dir: fullTmp}
	}
	// RLIMIT_DATA counts what a process has mapped, not what it has
	// touched: a Go or Node heap maps ahead in arenas (64 MiB for Go on
	// amd64), so it fails its next mapping with its resident set well
	// below the limit (a Go bomb under 256 MiB dies at 188 MiB, or lower
	// by an arena). Half the limit, with an abnormal end, is the limit's.
	abnormal := ws != nil && (ws.Signaled() || ws.Exited() && ws.ExitStatus() != 0)
	if m.Memory == ByRlimit && abnormal && maxRSS*2 >= l.MemoryBytes {
		return &limitHit{Kind: memoryLimit, Mech: m.Memory}
	}
	return nil
}

// spareThreads is how many idle threads the helper keeps for itself: its
// wait, its timer, its signals and its sampler, with room to spare.
const spareThreads = 8

// loopbackUp brings up the sandbox's own lo, the only interface it has.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return fmt.Errorf("ifreq lo: %w", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("ioctl(SIOCGIFFLAGS lo): %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("ioctl(SIOCSIFFLAGS lo): %w", err)
	}
	return nil
}
