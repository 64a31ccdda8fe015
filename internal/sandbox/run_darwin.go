package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nanosandbox/nanosandbox-mcp/internal/gitguard"
	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
)

// The macOS platform (DESIGN.md §4): each call runs as
//
//	/usr/bin/sandbox-exec -p PROFILE -D NAME=VALUE ... -- THIS-BINARY
//
// in a session of its own, where this binary, the reaper
// (reaper_darwin.go), sets the rlimits and starts the command. The profile
// is seatbelt.go's; the server writes the reaper its spec, then orders, on
// a pipe only the server holds: when the server dies, the pipe ends and
// the reaper kills everything of the call.

// darwinSandbox is what newPlatform prepared once for a policy.
type darwinSandbox struct {
	pol     *policy.Policy
	caps    Capabilities
	mech    Mechanisms
	self    string         // this binary, which sandbox-exec runs as the reaper
	static  seatbeltStatic // what every call's profile shares
	tmpRoot string         // where calls' temporary directories are made
	guard   *gitguard.Guard
}

func newPlatform(p *policy.Policy, caps *Capabilities, mech *Mechanisms) (platform, error) {
	if os.Getuid() == 0 {
		// Seatbelt confines root's commands to the profile, but the
		// profile shows what it does not hide, and root reads every
		// user's files: there is no uid of its own to run them as, as on
		// Linux.
		return nil, &Refusal{
			Cause: "running the server as root is refused on macOS: its commands would run as root, reading every user's files the profile does not name",
			Fix:   "run the server as your own user",
		}
	}
	if len(p.AllowNet) > 0 || p.HostNetwork {
		// TODO(#10): the proxy's loopback port (seatbelt.go proxyPort) and
		// the proxy itself on macOS; until then commands have no network,
		// and a policy that promises one is refused, not silently weakened.
		return nil, &Refusal{
			Cause: "--allow-net and --host-network are not available on macOS yet: commands there have no network at all",
			Fix:   "drop --allow-net and --host-network, and fetch what commands need before serving (into the workspace or a --read-only path)",
		}
	}
	s := &darwinSandbox{pol: p, caps: *caps, mech: *mech}
	if err := checkWritable(p); err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return nil, setupError("find this binary", err)
	}
	s.self = exe
	s.static = planSeatbelt(p, exe, hostFS{}, seatbeltCanon)
	s.tmpRoot = seatbeltCanon(p.CallTmp(), true)
	if err := s.startGuard(); err != nil {
		return nil, err
	}
	return s, nil
}

// childMain runs the reaper, the only stage macOS has.
func childMain(stage string) {
	if stage == "reaper" {
		reaperMain()
	}
	fmt.Fprintf(os.Stderr, "nanosandbox-mcp: unknown sandbox stage %q\n", stage)
	os.Exit(255)
}

// ProcessesLeft returns 0, 0: on macOS the process limit is set above the
// user's own processes for each call (reaperSpec.NProc), never below
// them.
func ProcessesLeft(maxConcurrent int) (limit, left int) { return 0, 0 }

func (s *darwinSandbox) keepSpare() {
	// A server makes many calls: keep the writable roots known between
	// them (on macOS the guard walks what changed; only Linux watches).
	if err := s.guard.Watch(); err != nil {
		slog.Warn("git guard: " + err.Error())
	}
}

func (s *darwinSandbox) close() {}

// maxArgvBytes bounds sandbox-exec's arguments and environment: macOS
// takes 1 MiB (kern.argmax), of which some is the reaper's own.
const maxArgvBytes = 900 << 10

// run runs one call: git's protections fixed, the profile rendered, the
// reaper started under it; then, once the command ends, times out or is
// cancelled, every process of the sandbox killed before git judges what
// the call changed.
func (s *darwinSandbox) run(ctx context.Context, c *Command, dryRun bool) (Result, error) {
	began := time.Now()
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

	tmp, err := os.MkdirTemp(s.tmpRoot, "nanosandbox-call-")
	if err != nil {
		return Result{}, setupError("temporary directory", err)
	}
	defer removeTree(tmp)

	plan := s.static.call(tmp, git.Protect, stdioOf(c), seatbeltCanon)
	profile, params := plan.render()
	argv := seatbeltArgs(profile, params, s.self)
	env := s.env(tmp)
	if n := argvBytes(argv, env); n > maxArgvBytes {
		return Result{}, &SetupError{Op: "seatbelt profile", Err: fmt.Sprintf(
			"%d paths to protect make a command line of %s, more than sandbox-exec takes; git protects every repository's config and hooks: pass a narrower workspace", len(params), policy.FormatSize(int64(n)))}
	}
	spec := reaperSpec{Path: c.Path, Args: c.Args, Env: env, Dir: s.pol.Workspace,
		Limits: s.pol.Limits, Mech: s.mech, Probe: dryRun}
	if s.mech.Processes == ByUserRlimit {
		spec.NProc = uint64(userProcesses() + s.pol.Limits.MaxProcesses)
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		return Result{}, bug(err)
	}

	var setupOut bytes.Buffer // sandbox-exec's own complaint, in a dry run
	if dryRun {
		c = &Command{Stderr: &setupOut}
	}
	r, err := startReaper(c, argv, env, s.pol.Workspace, append(raw, '\n'))
	if err != nil {
		return Result{}, err
	}
	defer r.discard()
	stdoutDone, stderrDone := r.attach(c)
	res, err := r.wait(ctx, c, began, s.pol.Limits)
	waitOutput(stdoutDone, stderrDone)
	if err != nil && dryRun {
		var se *SetupError
		if out := strings.TrimSpace(setupOut.String()); errors.As(err, &se) && out != "" {
			se.Err += ": " + strings.TrimPrefix(out, "sandbox-exec: ")
		}
	}
	endGit()
	res.Notes = append(res.Notes, gitNotes...)
	res.Duration = time.Since(began)
	return res, err
}

// env is a call's environment: the policy's, where there are no mounts to
// put things where it says: HOME the private home at its own path (or the
// home itself when it is granted, or else the call's temporary directory)
// and TMPDIR the call's temporary directory, unless --env set them.
func (s *darwinSandbox) env(tmp string) []string {
	home := tmp
	switch {
	case s.pol.PrivateHome != "":
		home = s.pol.PrivateHome
	case s.pol.HomeGranted:
		home = s.pol.Home
	}
	var out []string
	for _, kv := range s.pol.Env() {
		switch kv {
		case "HOME=" + s.pol.SandboxHome():
			kv = "HOME=" + home
		case "TMPDIR=/tmp":
			kv = "TMPDIR=" + tmp
		}
		out = append(out, kv)
	}
	return out
}

func argvBytes(argv, env []string) int {
	n := 0
	for _, s := range append(append([]string(nil), argv...), env...) {
		n += len(s) + 1 + 8 // the string, its NUL, its pointer
	}
	return n
}

// stdioOf returns what c passes as files for the command's stdio (the
// one-shot form's): terminals, and regular files a shell redirected,
// as the kernel names them. Pipes and sockets need no rule.
func stdioOf(c *Command) []sbStdio {
	var out []sbStdio
	seen := map[string]bool{}
	for i, x := range []any{c.Stdin, c.Stdout, c.Stderr} {
		f, ok := x.(*os.File)
		if !ok || f == nil {
			continue
		}
		fd := int(f.Fd())
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil {
			continue
		}
		kind := stdioOutput
		switch {
		case st.Mode&unix.S_IFMT == unix.S_IFCHR:
			if _, err := unix.IoctlGetTermios(fd, unix.TIOCGETA); err != nil {
				continue // /dev/null and its kind: the profile allows them
			}
			kind = stdioTerminal
		case st.Mode&unix.S_IFMT != unix.S_IFREG:
			continue
		case i == 0:
			kind = stdioInput
		}
		p, err := fdPath(fd)
		if err != nil || !filepath.IsAbs(p) || seen[p] {
			continue
		}
		seen[p] = true
		out = append(out, sbStdio{p, kind})
	}
	return out
}

// reaperProc is a call's sandbox-exec, then its reaper: the same process.
type reaperProc struct {
	cmd   *exec.Cmd
	since time.Time // just before it started: nothing of the call is older
	// orders carries lines to the lifeline, the spec first; closing it
	// ends the lifeline once they are written.
	orders  chan []byte
	ordered bool // orders is closed
	// reports delivers the reaper's reports but Killed ones, which go to
	// killed; both close when the report pipe ends.
	reports chan reaperReport
	killed  chan int
	exited  chan struct{} // closed once waited for, with waitErr
	waitErr error
	// The server's ends of the command's stdio when it goes through pipes.
	stdinW, stdoutR, stderrR *os.File
}

// startReaper starts sandbox-exec for argv in dir with env, stdio from c
// (through pipes unless they are files), and writes it spec.
func startReaper(c *Command, argv, env []string, dir string, spec []byte) (_ *reaperProc, err error) {
	r := &reaperProc{exited: make(chan struct{}), reports: make(chan reaperReport, 16), killed: make(chan int, 1)}
	var childEnds []*os.File // closed once the child holds its copies
	defer func() {
		for _, f := range childEnds {
			f.Close()
		}
		if err != nil {
			r.discard()
		}
	}()
	pipe := func() (rd, wr *os.File, err error) {
		if rd, wr, err = os.Pipe(); err != nil {
			return nil, nil, setupError("pipe", err)
		}
		return rd, wr, nil
	}
	lifeR, lifeW, err := pipe()
	if err != nil {
		return nil, err
	}
	childEnds = append(childEnds, lifeR)
	repR, repW, err := pipe()
	if err != nil {
		lifeW.Close()
		return nil, err
	}
	childEnds = append(childEnds, repW)

	r.cmd = &exec.Cmd{
		Path:       sandboxExec,
		Args:       argv,
		Env:        append(append([]string(nil), env...), childEnv+"=reaper"),
		Dir:        dir,
		ExtraFiles: []*os.File{lifeR, repW},
		// A session of its own: no terminal to take signals from, and
		// the id the fallback (killLeft) knows the call's processes by.
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	var stdio [3]*os.File
	if piped(c) {
		if stdio[0], r.stdinW, err = pipe(); err != nil {
			lifeW.Close()
			return nil, err
		}
		if r.stdoutR, stdio[1], err = pipe(); err != nil {
			lifeW.Close()
			return nil, err
		}
		if r.stderrR, stdio[2], err = pipe(); err != nil {
			lifeW.Close()
			return nil, err
		}
		childEnds = append(childEnds, stdio[:]...)
	} else {
		stdio[0], _ = c.Stdin.(*os.File)
		stdio[1], _ = c.Stdout.(*os.File)
		stdio[2], _ = c.Stderr.(*os.File)
	}
	// exec.Cmd takes a nil *os.File inside an interface for a file.
	if stdio[0] != nil {
		r.cmd.Stdin = stdio[0]
	}
	if stdio[1] != nil {
		r.cmd.Stdout = stdio[1]
	}
	if stdio[2] != nil {
		r.cmd.Stderr = stdio[2]
	}
	r.since = time.Now()
	if err := r.cmd.Start(); err != nil {
		lifeW.Close()
		r.cmd = nil
		return nil, &SetupError{Op: "start " + sandboxExec, Err: err.Error(), Errno: errnoOf(err)}
	}
	go func() {
		r.waitErr = r.cmd.Wait()
		close(r.exited)
	}()
	// The lifeline's only writer: the spec, then each order; it stays
	// open until the call is over, or the server is gone.
	r.orders = make(chan []byte, 4)
	r.orders <- spec
	go func() {
		for line := range r.orders {
			lifeW.Write(line) // fails once the reaper is gone: nothing to tell it then
		}
		lifeW.Close()
	}()
	go func() {
		readReaperReports(repR, func(rep reaperReport) {
			if rep.Killed != nil {
				select {
				case r.killed <- *rep.Killed:
				default:
				}
				return
			}
			select {
			case r.reports <- rep:
			default: // more than a call ever sends: not the reaper's
			}
		})
		repR.Close()
		close(r.reports)
	}()
	return r, nil
}

// piped reports whether c needs its stdio through pipes the server
// serves, rather than files passed on as they are.
func piped(c *Command) bool {
	_, in := c.Stdin.(*os.File)
	_, out := c.Stdout.(*os.File)
	_, errOut := c.Stderr.(*os.File)
	return !(in || c.Stdin == nil) || !(out || c.Stdout == nil) || !(errOut || c.Stderr == nil)
}

// order sends the reaper an order.
func (r *reaperProc) order(o reaperOrder) {
	if r.ordered {
		return
	}
	b, _ := json.Marshal(o)
	r.orders <- append(b, '\n')
}

// endLifeline closes the lifeline once what was ordered is written.
func (r *reaperProc) endLifeline() {
	if !r.ordered {
		r.ordered = true
		close(r.orders)
	}
}

// attach connects a piped call to c: c's stdin is copied in, and its
// output drained out in large reads. The channels close when the output
// ends (nil for a stream not piped).
func (r *reaperProc) attach(c *Command) (stdoutDone, stderrDone <-chan struct{}) {
	if r.stdinW != nil {
		w := r.stdinW
		r.stdinW = nil
		if c.Stdin == nil {
			w.Close()
		} else {
			go func() {
				io.Copy(w, c.Stdin) // ends with an error once nothing can read
				w.Close()
			}()
		}
	}
	drain := func(rd *os.File, w io.Writer) <-chan struct{} {
		if rd == nil {
			return nil
		}
		if w == nil {
			w = io.Discard
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer rd.Close()
			buf := make([]byte, 256<<10)
			for {
				n, err := rd.Read(buf)
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
	stdoutDone, stderrDone = drain(r.stdoutR, c.Stdout), drain(r.stderrR, c.Stderr)
	r.stdoutR, r.stderrR = nil, nil
	return stdoutDone, stderrDone
}

// waitDelay bounds how long output is awaited once every process of the
// call is gone.
const waitDelay = 2 * time.Second

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

// reaperLost is the note of a call whose reaper a command killed.
const reaperLost = "the command killed the sandbox's reaper (kill -9 -1 does that): its exit status is unknown, " +
	"and a process it moved out of its process group and session may outlive the call (macOS has no pid namespace to hold it)"

// wait follows the call until the command ends, times out or is
// cancelled, then has every process of the sandbox killed, and says how
// the call ended.
func (r *reaperProc) wait(ctx context.Context, c *Command, began time.Time, limits policy.Limits) (Result, error) {
	var res Result
	var timeout <-chan time.Time
	if c.Timeout > 0 {
		t := time.NewTimer(c.Timeout - time.Since(began))
		defer t.Stop()
		timeout = t.C
	}
	var (
		ready bool
		pid   int
		exit  *exitStatus
		fail  error
	)
	take := func(rep reaperReport) {
		switch {
		case rep.Ready:
			ready = true
		case rep.Pid != 0:
			pid = rep.Pid
		case rep.Exit != nil:
			exit = rep.Exit
		case rep.Setup != nil:
			fail = rep.Setup
		case rep.Start != nil:
			fail = rep.Start
		}
	}
	reports := r.reports
	reaperGone := false
running:
	for exit == nil && fail == nil {
		select {
		case rep, ok := <-reports:
			if !ok {
				reports = nil
				continue
			}
			take(rep)
		case <-r.exited:
			reaperGone = true
			break running
		case <-timeout:
			res.TimedOut = true
			break running
		case <-ctx.Done():
			res.Canceled = true
			break running
		case sig := <-c.Signals:
			r.cmd.Process.Signal(sig) // the reaper passes it on to the command
		}
	}

	if reaperGone && reports != nil {
		// All it said is read once the report pipe ends: it alone
		// writes it.
		for rep := range reports {
			take(rep)
		}
		reports = nil
	}
	// Every process of the call killed, by the reaper while it lives (and
	// a command that starts after the last round, by the reaper on Done).
	if !reaperGone && ready {
		reaperGone = !r.reapAll()
	}
	if reaperGone && pid != 0 && exit == nil {
		// The command ended the reaper: let it run to its own end (or
		// the call's), then kill what can be told apart as the call's.
		if !res.TimedOut && !res.Canceled {
		follow:
			for unix.Kill(pid, 0) == nil {
				select {
				case <-time.After(20 * time.Millisecond):
				case <-timeout:
					res.TimedOut = true
					break follow
				case <-ctx.Done():
					res.Canceled = true
					break follow
				}
			}
		}
		killLeft(pid, r.cmd.Process.Pid, r.since)
		res.Notes = append(res.Notes, reaperLost)
	}
	r.order(reaperOrder{Done: true})
	r.endLifeline()
	select {
	case <-r.exited:
	case <-time.After(waitDelay):
		r.cmd.Process.Kill()
		<-r.exited
	}
	if reports != nil {
		for rep := range reports {
			take(rep)
		}
	}

	switch {
	case fail != nil:
		return res, fail
	case !ready:
		return res, &SetupError{Op: "sandbox-exec", Err: describeExit(r.waitErr) + " before the sandbox was ready"}
	case exit != nil:
		res.ExitCode = exit.Code
		if exit.Signal != 0 {
			res.SignalNo = exit.Signal
			res.Signal = unix.SignalName(syscall.Signal(exit.Signal))
		}
		if exit.Limit != nil {
			res.Limit = exit.Limit.words(limits)
		}
		res.MemoryPeakBytes = exit.MaxRSS
	case pid == 0:
		// A dry run: ready, and nothing to run.
	default:
		res.ExitCode = -1
		if res.TimedOut || res.Canceled {
			res.SignalNo, res.Signal = int(syscall.SIGKILL), "SIGKILL"
		}
	}
	return res, nil
}

// maxReapRounds bounds the rounds of killing: each kills what the last
// missed (a process forked while it ran).
const maxReapRounds = 20

// reapAll has the reaper kill every process of the call, round after
// round, until one finds none left; it reports whether the reaper did
// (false: it is gone, or does not answer).
func (r *reaperProc) reapAll() bool {
	for range maxReapRounds {
		o := reaperOrder{}
		pids, err := callProcesses(r.since, r.cmd.Process.Pid)
		switch {
		case err != nil:
			// Every pid may be one of the call's.
			slog.Warn("list processes: " + err.Error())
			o.All = true
		case len(pids) == 0:
			return true
		default:
			o.Reap = pids
		}
		r.order(o)
		select {
		case n, ok := <-r.killed:
			if !ok {
				return false
			}
			if n == 0 || o.All {
				return true
			}
		case <-r.exited:
			return false
		case <-time.After(waitDelay):
			return false
		}
		time.Sleep(2 * time.Millisecond) // the killed leave the process table
	}
	return true
}

// szomb is a zombie's p_stat (<sys/proc.h>).
const szomb = 5

// callProcesses lists the processes a call may have started: the user's
// (by effective or real uid), alive, started since its sandbox-exec
// (with a second to spare for the clock's grain), but for this server and
// the reaper. Only those of the call's sandbox can be killed by the
// reaper; the rest are the user's own, and the kill fails.
func callProcesses(since time.Time, reaper int) ([]int, error) {
	uid, self := os.Getuid(), os.Getpid()
	seen := map[int]bool{}
	var out []int
	var errs []error
	for _, name := range []string{"kern.proc.uid", "kern.proc.ruid"} {
		procs, err := unix.SysctlKinfoProcSlice(name, uid)
		if err != nil {
			errs = append(errs, fmt.Errorf("sysctl %s: %w", name, err))
			continue
		}
		for _, p := range procs {
			pid := int(p.Proc.P_pid)
			start := time.Unix(p.Proc.P_starttime.Sec, int64(p.Proc.P_starttime.Usec)*1000)
			if pid <= 1 || pid == self || pid == reaper || seen[pid] || p.Proc.P_stat == szomb || start.Before(since.Add(-time.Second)) {
				continue
			}
			seen[pid] = true
			out = append(out, pid)
		}
	}
	sort.Ints(out)
	if len(errs) == 2 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// killLeft kills, from outside the sandbox, what a call left once its
// reaper is gone and that the server can tell is the call's: the
// command's process group, the reaper's session, and their children.
// A process that left both for a session of its own it cannot tell from
// the user's own, and leaves.
func killLeft(pgid, session int, since time.Time) {
	unix.Kill(-pgid, unix.SIGKILL)
	procs, err := unix.SysctlKinfoProcSlice("kern.proc.uid", os.Getuid())
	if err != nil {
		return
	}
	ours := map[int]bool{pgid: true, session: true}
	parent := map[int]int{}
	for _, p := range procs {
		parent[int(p.Proc.P_pid)] = int(p.Eproc.Ppid)
	}
	for _, p := range procs {
		pid := int(p.Proc.P_pid)
		start := time.Unix(p.Proc.P_starttime.Sec, int64(p.Proc.P_starttime.Usec)*1000)
		if pid <= 1 || pid == os.Getpid() || start.Before(since.Add(-time.Second)) {
			continue
		}
		mine := false
		if sid, err := unix.Getsid(pid); err == nil && sid == session {
			mine = true
		}
		if pg, err := unix.Getpgid(pid); err == nil && pg == pgid {
			mine = true
		}
		for a, n := parent[pid], 0; a > 1 && n < 64 && !mine; a, n = parent[a], n+1 {
			mine = ours[a]
		}
		if mine {
			unix.Kill(pid, unix.SIGKILL)
		}
	}
}

// userProcesses counts the processes of the user (by real uid, as
// RLIMIT_NPROC does).
func userProcesses() int {
	procs, err := unix.SysctlKinfoProcSlice("kern.proc.ruid", os.Getuid())
	if err != nil {
		return 0
	}
	return len(procs)
}

// discard kills the reaper if it still runs, waits for it, and releases
// what it held. It is safe to call more than once.
func (r *reaperProc) discard() {
	if r.cmd != nil && r.cmd.Process != nil {
		r.endLifeline()
		select {
		case <-r.exited:
		default:
			r.cmd.Process.Kill()
			<-r.exited
		}
		r.cmd = nil
	}
	for _, f := range []**os.File{&r.stdinW, &r.stdoutR, &r.stderrR} {
		if *f != nil {
			(*f).Close()
			*f = nil
		}
	}
}

func describeExit(err error) string {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return "exited"
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "killed by " + unix.SignalName(ws.Signal())
		}
		return fmt.Sprintf("exited with status %d", ee.ExitCode())
	}
	return strings.TrimPrefix(err.Error(), "exec: ")
}

// removeTree removes a call's temporary directory, whatever the command
// left in it: directories it made unreadable, files it made immutable.
func removeTree(dir string) {
	if os.RemoveAll(dir) == nil {
		return
	}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if d != nil && d.Type()&fs.ModeSymlink == 0 {
			unix.Chflags(p, 0)
			if d.IsDir() {
				unix.Fchmodat(unix.AT_FDCWD, p, 0o700, unix.AT_SYMLINK_NOFOLLOW)
			}
		}
		return nil
	})
	os.RemoveAll(dir)
}

// checkWritable refuses a writable grant that commands could not write:
// otherwise it fails only once a command tries, and in MCP mode that reads
// as a broken server.
func checkWritable(p *policy.Policy) error {
	for _, g := range p.Writable() {
		want := uint32(unix.W_OK)
		if g.Dir {
			want |= unix.X_OK
		}
		why, hint := "", ""
		switch err := unix.Access(g.Path, want); {
		case errors.Is(err, unix.EROFS):
			why, hint = "it is on a read-only filesystem", "pass a path on a writable filesystem"
		case err != nil:
			why, hint = fmt.Sprintf("you (uid %d) may not write it: %v", os.Getuid(), err), "make it writable for you (chmod u+w "+g.Path+"), or pass one you can write"
		}
		if why == "" {
			continue
		}
		if g.Flag == "--writable" {
			hint += ", or grant it with --read-only if commands only read it"
		}
		return &policy.FlagError{Flag: g.Flag, Value: g.Path, Err: "commands cannot write it: " + why, Hint: hint}
	}
	return nil
}
