package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nanosandbox/nanosandbox-mcp/internal/gitguard"
	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
)

// timeoutGrace is how long after the timeout the server kills the helper
// itself, should the helper (which enforces the timeout and reports what
// the command was doing) not have ended the call.
const timeoutGrace = 2 * time.Second

// linuxSandbox is the Linux platform: what newPlatform prepared once for a
// policy, and the helpers it starts, one per call (helperproc_linux.go),
// plus one ahead of the next call (spare_linux.go).
type linuxSandbox struct {
	pol  *policy.Policy
	caps Capabilities // as prepare found them
	mech Mechanisms

	// static is the plan calls share, made again when a call finds the
	// host changed under it (staticPlan.current).
	static atomic.Pointer[staticPlan]
	// planMade is when prepare made the plan, until a call takes it: a
	// first call soon after takes it without asking the host again
	// (currentPlan).
	planMade atomic.Int64
	// mounts says when the host's mount table changed, and mountGen
	// counts the changes seen: a plan is made again at each, and a spare
	// helper started before one, whose copy of the table is older, is
	// not used.
	mounts   *mountWatch
	mountGen atomic.Uint64
	landlock landlockRules
	// reduced is set when commands run without namespaces
	// (reduced_linux.go); filter then says what seccomp holds in their
	// place.
	reduced  bool
	filter   filterOptions
	uid, gid int
	cgroups  *cgroupTree // nil unless a limit is held by cgroup v2
	guard    *gitguard.Guard
	root     *rootCaller // nil unless the caller is root (rootcaller_linux.go)
	// cHelper is set when the helpers are the one in C (chelper_linux.go):
	// only where asked for (cHelperEnv) and both blobs were built.
	cHelper bool
	spares  spares
	// env is every command's environment: the policy's, and the proxy's
	// variables unless the network is the host's.
	env []string
	// lookup resolves names for the proxy; if nil, the host's resolver
	// does (tests bring their own).
	lookup lookupFunc
}

func newPlatform(p *policy.Policy, caps *Capabilities, mech *Mechanisms) (platform, error) {
	s := &linuxSandbox{pol: p, caps: *caps, mech: *mech}
	if err := s.prepare(); err != nil {
		return nil, err
	}
	*caps, *mech = s.caps, s.mech
	return s, nil
}

// prepare does once what every call needs: the root caller's idmapping,
// the cgroup subtree, the checks of the grants, the plan of the mounts
// that do not change between calls, the Landlock rules, and git's watch.
func (s *linuxSandbox) prepare() error {
	if s.pol.WithoutNamespaces {
		return s.prepareReduced()
	}
	s.uid, s.gid = os.Getuid(), os.Getgid()
	if s.pol.HostNetwork && s.caps.LandlockABI < 6 {
		// Abstract unix sockets belong to a network namespace, not to a
		// path: on the host's, only Landlock's scoping keeps commands from
		// the host's (D-Bus, X11, and whatever else listens there).
		return &Refusal{
			Cause: fmt.Sprintf("--host-network shares the host's network namespace, where the host's abstract unix sockets are; only Landlock ABI 6 (Linux 6.12) keeps commands from them, and this kernel has ABI %d", s.caps.LandlockABI),
			Fix:   "let commands reach the hosts they need through the proxy with --allow-net HOST instead, or use Linux 6.12 or later",
		}
	}
	s.env = append(s.pol.Env(), proxyEnv(s.pol)...)
	s.cHelper = useCHelper()
	if s.uid == 0 {
		r, err := newRootCaller(s.pol)
		if err != nil {
			return err
		}
		s.root = r
	}
	if err := s.adoptCgroups(); err != nil {
		return err
	}
	if err := checkWritable(s.pol, s.uid, s.gid); err != nil {
		return err
	}
	s.mounts = watchMounts()
	static := planStatic(s.pol, hostFS{})
	if err := checkAliasGrants(s.pol, static.homeAliases); err != nil {
		return err
	}
	s.static.Store(&static)
	s.planMade.Store(time.Now().UnixNano())
	writable := append([]string{"/dev/shm"}, static.writable...)
	s.landlock = landlockRules{
		ReadOnly: []string{"/"},
		Writable: writable,
		Devices:  []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx", "/dev/pts"},
	}
	return s.startGuard()
}

// freshPlan is how old the plan prepare made may be for the first call to
// take it as it is (currentPlan): a one-shot command's comes a millisecond
// or so after it, once git's protection has started.
const freshPlan = 50 * time.Millisecond

// currentPlan returns the shared plan as the host is now: the one made
// before, or, when a credential or a home appeared or went since, a new
// one, kept for the calls after.
func (s *linuxSandbox) currentPlan() (*staticPlan, error) {
	old := s.static.Load()
	if made := s.planMade.Swap(0); made != 0 && time.Since(time.Unix(0, made)) < freshPlan {
		// Made moments ago by prepare, for this first call (a one-shot
		// command's, a server's dry run): asking again, the mount table
		// too, would cover only those moments, no more than the moments
		// after the check, before the mounts, which nothing covers. Every
		// later call asks. (A mount table changed meanwhile is seen by
		// the next call: prepare read it before planning.)
		return old, nil
	}
	var sp *staticPlan
	if s.mounts.changed() {
		// Another alias, maybe: planned again from the table as it is.
		s.mountGen.Add(1)
		n := planStatic(s.pol, hostFS{})
		sp = &n
	} else if sp = old.current(s.pol, hostFS{}); sp == old {
		return sp, nil
	}
	if err := checkAliasGrants(s.pol, sp.homeAliases); err != nil {
		return nil, setupError("plan the mounts", err)
	}
	s.static.CompareAndSwap(old, sp) // a concurrent call's plan is as new
	return sp, nil
}

// adoptCgroups takes the delegated cgroup v2 subtree where a limit is held
// by one.
func (s *linuxSandbox) adoptCgroups() error {
	if !s.mech.usesCgroup() {
		return nil
	}
	tree, err := adoptCgroup(s.caps.Cgroup, s.mech.CPUs == ByCgroup)
	if err != nil {
		// The probe was too hopeful: hold the limits without cgroups,
		// or refuse those that need them.
		s.caps.Cgroup, s.caps.CgroupWhy = "", "the delegated cgroup is unusable: "+err.Error()
		mech, r := mechanisms(s.pol.Limits, s.caps, s.uid)
		if r != nil {
			return r
		}
		s.mech = mech
		return nil
	}
	s.cgroups = tree
	return nil
}

// run runs one call in a helper of its own, or in the spare when c's stdio
// goes through pipes, and gathers how it ended from the helper's reports,
// its exit and its cgroup.
func (s *linuxSandbox) run(ctx context.Context, c *Command, dryRun bool) (Result, error) {
	began := time.Now()
	// Git first: what a call may not change is fixed before it starts, and
	// what it changed is judged once all of it is gone, before its result
	// (and before anything else).
	git, err := s.guard.Begin()
	if err != nil {
		return Result{}, setupError("git protection", err)
	}
	var gitNotes []string
	gitEnded := false
	endGit := func() {
		switch {
		case gitEnded:
		case dryRun:
			git.EndQuietly() // its notes go to the first call
		default:
			gitNotes = git.End()
		}
		gitEnded = true
	}
	defer endGit()

	sp := spec{
		UID:         s.uid,
		GID:         s.gid,
		Dir:         s.pol.Workspace,
		Path:        c.Path,
		Args:        c.Args,
		Env:         s.env,
		LandlockABI: s.caps.LandlockABI,
		Landlock:    s.landlock,
		Limits:      s.pol.Limits,
		Mech:        s.mech,
		Filter:      s.filter,
		Timeout:     c.Timeout,
		Probe:       dryRun,
		HostNetwork: s.pol.HostNetwork,
	}
	if s.reduced {
		// No mounts: TMPDIR is a directory of the call's own, which
		// Landlock grants with the writable paths; git's carve-outs were
		// given up by name, and its judgment at the end still runs.
		tmp, err := s.callTmp()
		if err != nil {
			return Result{}, err
		}
		defer removeTmp(tmp) // after the call's processes, which endGit waits for too
		sp.Env = withTmp(s.env, tmp)
		sp.Landlock.Writable = append(append([]string(nil), s.landlock.Writable...), tmp)
	} else {
		static, err := s.currentPlan()
		if err != nil {
			return Result{}, err
		}
		sp.Ops = planCall(s.pol, *static, gitOps(git.Protect), hostFS{})
	}
	var ccall *cHelperCall
	var raw []byte
	if s.cHelper {
		raw, ccall, err = s.cHelperBlock(&sp)
	} else if raw, err = json.Marshal(sp); err != nil {
		err = bug(err)
	}
	if err != nil {
		return Result{}, err
	}

	h, err := s.helperFor(ctx, c, raw, ccall)
	if err != nil {
		return Result{}, err
	}
	defer func() {
		h.discard()
		// The next spare is started once this call is over, not beside
		// it: on a busy machine the two would slow each other down.
		go s.refillSpare()
	}()
	proxy := s.serveProxy(h.netConn)
	h.netConn = nil
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
		h.stop()
	case <-ctx.Done():
		res.Canceled = true
		h.stop()
	}
	<-h.exited
	waitErr = h.waitErr
	rs := <-h.reports
	// Everything that held the pipes died with the pid namespace: the
	// readers reach EOF. (waitDelay bounds it should something not have.)
	waitOutput(stdoutDone, stderrDone)
	endGit()
	res.Notes = append(res.Notes, gitNotes...)
	// The command's connections died with it; the proxy ends the rest,
	// with what it refused.
	if note := proxy.end(); note != "" {
		res.Notes = append(res.Notes, note)
	}
	res.Duration = time.Since(began)
	var cgo cgroupOutcome
	if h.cg != nil {
		cgo = h.cg.finish()
		h.cg = nil
		res.MemoryPeakBytes = cgo.memoryPeak
	}
	return s.outcome(res, rs, cgo, waitErr)
}

// helperFor hands the call's spec raw to the spare, when c's stdio goes
// through pipes and the spare is alive, or else to a helper started now.
// ccall is set when the helpers are the one in C, and raw its block.
func (s *linuxSandbox) helperFor(ctx context.Context, c *Command, raw []byte, ccall *cHelperCall) (*helperProc, error) {
	// A spare that died while it waited never took the call: the call
	// goes to a helper started now instead.
	var h *helperProc
	if piped(c) {
		h = s.spares.take()
	}
	if h != nil && h.mountGen != s.mountGen.Load() {
		go h.discard() // its mounts are a copy of an older table
		h = nil
	}
	if h != nil {
		h.ccall = ccall
	}
	if h != nil && !h.hand(ctx, raw) {
		go h.discard()
		h = nil
	}
	if h == nil {
		var err error
		if h, err = s.startHelper(c); err != nil {
			return nil, err
		}
		h.ccall = ccall
		h.hand(ctx, raw) // a fresh one that fails reports why, or its exit says
	}
	return h, nil
}

// outcome completes res, what the server saw of a call, with what the
// helper reported (rs), what the command's cgroup recorded (cgo) and how
// the helper exited (waitErr); or returns why the command did not run.
func (s *linuxSandbox) outcome(res Result, rs []report, cgo cgroupOutcome, waitErr error) (Result, error) {
	for _, r := range rs {
		if r.Moved != nil {
			// Said to the model, and logged for the user, who finds it
			// in the private home (a start's dry run has no model).
			note := r.Moved.words()
			slog.Warn("sandbox: " + note + s.onHost(r.Moved.to()))
			res.Notes = append(res.Notes, note)
		}
	}
	for _, r := range rs {
		switch {
		case r.Setup != nil:
			if why, fix := noCapabilities(r.Setup); why != "" {
				// The namespaces were made, without the capabilities to
				// build the sandbox in them (the probe, skipped or earlier,
				// did not see it).
				return res, &SetupError{Op: "create namespaces", Err: "user namespaces give no capabilities here: " + why, Fix: fix, Errno: r.Setup.Errno}
			}
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
		res.Limit = limitHit{Kind: memoryLimit, Mech: ByCgroup}.words(s.pol.Limits)
	case cgo.pidsAtMax:
		res.Limit = limitHit{Kind: processLimit, Mech: ByCgroup}.words(s.pol.Limits)
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
			if res.Limit == "" && r.Exit.Limit != nil {
				res.Limit = r.Exit.Limit.words(s.pol.Limits)
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

// words says what m was, where it went and why, as the command sees it.
func (m movedAside) words() string {
	want := "a file"
	if m.Dir {
		want = "a directory"
	}
	return fmt.Sprintf("moved aside: %s was %s where the sandbox mounts %s; it is now %s (nothing was removed)",
		m.Path, fileKind(m.Mode), want, m.to())
}

// to is where m went.
func (m movedAside) to() string { return m.Path + movedSuffix + strconv.Itoa(m.N) }

// fileKind names a file type (the S_IFMT bits of a mode).
func fileKind(mode uint32) string {
	switch mode {
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFREG:
		return "a file"
	case unix.S_IFLNK:
		return "a symbolic link"
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFCHR, unix.S_IFBLK:
		return "a device"
	}
	return "something of an unknown type"
}

// onHost says where path, as a command sees it, is on the host when it is
// in the private home; else "".
func (s *linuxSandbox) onHost(path string) string {
	p := s.pol
	if p.PrivateHome == "" || !policy.Within(path, p.Home) {
		return ""
	}
	rel, _ := filepath.Rel(p.Home, path)
	return " (on the host: " + filepath.Join(p.PrivateHome, rel) + ")"
}
