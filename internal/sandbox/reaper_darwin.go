package sandbox

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
)

// The reaper is this binary run by sandbox-exec as the first process of a
// call's sandbox (the server starts it in a session of its own). It sets
// the rlimits, starts the command in a process group of its own, reports
// how it ended, and kills every process of the sandbox when the server
// says so or is gone: macOS has no pid namespace, and only a process of
// the same sandbox may signal the sandbox's processes (the profile allows
// no other), so a kill from inside tells them apart from the user's own.
// A command's daemon that left its process group and session is still
// in the sandbox, and is killed with the rest.

// Descriptors the reaper receives besides stdio.
const (
	lifelineFD  = 3 // from the server: the spec, then orders; its end means the server is gone
	reaperRepFD = 4 // to the server: reports, one JSON object per line
)

// reaperSpec is what the reaper needs for one call: the first line on the
// lifeline.
type reaperSpec struct {
	Path   string        `json:"path"`
	Args   []string      `json:"args"`
	Env    []string      `json:"env"`
	Dir    string        `json:"dir"`
	Limits policy.Limits `json:"limits"`
	Mech   Mechanisms    `json:"mech"`
	// NProc is the RLIMIT_NPROC to set: on macOS it counts every process
	// of the user, so it is the user's processes at the start of the call
	// plus --max-processes. Zero for none.
	NProc uint64 `json:"nproc,omitempty"`
	// Probe applies every restriction, then exits 0 instead of running a
	// program: a dry run.
	Probe bool `json:"probe,omitempty"`
}

// reaperOrder is a line from the server after the spec.
type reaperOrder struct {
	// Reap lists processes the call may have started: the reaper kills
	// each that is in its sandbox and reports how many it killed.
	Reap []int `json:"reap,omitempty"`
	// All is Reap of every pid: the server could not list processes.
	All bool `json:"all,omitempty"`
	// Done ends the reaper: the call is over.
	Done bool `json:"done,omitempty"`
}

// reaperReport is a line from the reaper.
type reaperReport struct {
	// Ready says the restrictions are applied and the command is about to
	// start (or, for a probe, the reaper to exit 0).
	Ready  bool        `json:"ready,omitempty"`
	Setup  *SetupError `json:"setup,omitempty"`
	Start  *StartError `json:"start,omitempty"`
	Pid    int         `json:"pid,omitempty"`    // the command, leader of its own process group
	Exit   *exitStatus `json:"exit,omitempty"`   // how the command ended
	Killed *int        `json:"killed,omitempty"` // the answer to a Reap order
}

// exitStatus is how the command ended.
type exitStatus struct {
	Code   int       `json:"code"`
	Signal int       `json:"signal"`
	Limit  *limitHit `json:"limit,omitempty"`   // the limit that stopped it, if one did
	MaxRSS int64     `json:"max_rss,omitempty"` // bytes, its largest process's peak
}

// maxPid bounds the pids the reaper tries when the server is gone and no
// longer says which: macOS allots them below 100000 (PID_MAX).
const maxPid = 99999

func reaperMain() {
	unix.CloseOnExec(lifelineFD) // the command inherits neither
	unix.CloseOnExec(reaperRepFD)
	// Signals sent to the reaper are the command's (the one-shot form
	// forwards Ctrl-C here): held from the start, passed on once it runs,
	// never obeyed.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2)
	rep := os.NewFile(reaperRepFD, "report")
	send := func(r reaperReport) {
		b, _ := json.Marshal(r)
		rep.Write(append(b, '\n'))
	}
	fail := func(err error) {
		var se *SetupError
		if !errors.As(err, &se) {
			se = setupError("reaper", err)
		}
		send(reaperReport{Setup: se})
		os.Exit(255)
	}
	lifeline := bufio.NewReaderSize(os.NewFile(lifelineFD, "lifeline"), 64<<10)
	line, _ := lifeline.ReadBytes('\n')
	if len(line) == 0 {
		os.Exit(255) // the server is gone already
	}
	var s reaperSpec
	if err := json.Unmarshal(line, &s); err != nil {
		fail(fmt.Errorf("decode spec: %w", err))
	}
	if err := unix.Chdir(s.Dir); err != nil {
		fail(setupError("chdir "+s.Dir, err))
	}
	if err := setDarwinRlimits(s); err != nil {
		fail(err)
	}
	send(reaperReport{Ready: true})
	if s.Probe {
		os.Exit(0)
	}
	path, serr := lookPath(s.Path, envValue(s.Env, "PATH"))
	if serr == nil {
		cmd := &exec.Cmd{
			Path: path, Args: append([]string{s.Path}, s.Args...), Env: s.Env, Dir: s.Dir,
			Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
			// Its own group: a command's kill 0 ends its own, not this.
			SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
		}
		if err := cmd.Start(); err != nil {
			serr = startError(s.Path, err)
		} else {
			send(reaperReport{Pid: cmd.Process.Pid})
			reap(cmd, s, lifeline, sigs, send)
		}
	}
	send(reaperReport{Start: serr})
	if serr.NotFound {
		os.Exit(127)
	}
	os.Exit(126)
}

// reap waits for the command and for the server's orders, killing what
// they name, until the server is done; it never returns.
func reap(cmd *exec.Cmd, s reaperSpec, lifeline *bufio.Reader, sigs <-chan os.Signal, send func(reaperReport)) {
	self := os.Getpid()
	exited := make(chan *exitStatus, 1)
	go func() {
		cmd.Wait()
		exited <- exitOf(cmd.ProcessState, s.Mech)
	}()
	orders := make(chan reaperOrder)
	go func() {
		defer close(orders)
		for {
			line, err := lifeline.ReadBytes('\n')
			var o reaperOrder
			if len(line) > 0 && json.Unmarshal(line, &o) == nil {
				orders <- o
			}
			if err != nil {
				return
			}
		}
	}()
	for {
		select {
		case e := <-exited:
			send(reaperReport{Exit: e})
			exited = nil
		case sig := <-sigs:
			cmd.Process.Signal(sig)
		case o, ok := <-orders:
			switch {
			case !ok:
				// The server is gone, and says nothing more: every
				// pid may be one of the call's.
				sweep(self)
				sweep(self)
				os.Exit(0)
			case o.Done:
				if exited != nil {
					// Started after the server's last round: it ends
					// with the call all the same.
					unix.Kill(-cmd.Process.Pid, unix.SIGKILL)
					cmd.Process.Kill()
					select {
					case e := <-exited:
						send(reaperReport{Exit: e})
					case <-time.After(time.Second):
					}
				}
				os.Exit(0)
			case o.All:
				n := sweep(self)
				send(reaperReport{Killed: &n})
			default:
				n := 0
				for _, pid := range o.Reap {
					// Allowed only for a process of this sandbox: the
					// profile lets no other be signalled.
					if pid > 1 && pid != self && unix.Kill(pid, unix.SIGKILL) == nil {
						n++
					}
				}
				send(reaperReport{Killed: &n})
			}
		}
	}
}

// sweep kills every process it may, but itself: those of its sandbox.
// It returns how many it killed.
func sweep(self int) int {
	n := 0
	for pid := 2; pid <= maxPid; pid++ {
		if pid != self && unix.Kill(pid, unix.SIGKILL) == nil {
			n++
		}
	}
	return n
}

// exitOf is how the command ended, with the limit that ended it.
func exitOf(ps *os.ProcessState, m Mechanisms) *exitStatus {
	e := &exitStatus{Code: ps.ExitCode()}
	ws, _ := ps.Sys().(syscall.WaitStatus)
	var sig syscall.Signal
	switch {
	case ws.Signaled():
		e.Code, e.Signal = -1, int(ws.Signal())
		sig = ws.Signal()
	case ws.Exited() && ws.ExitStatus() > 128:
		sig = syscall.Signal(ws.ExitStatus() - 128) // as a shell reports its child's
	}
	switch {
	case sig == unix.SIGXCPU && m.CPUTime != NoLimit:
		e.Limit = &limitHit{Kind: cpuTimeLimit, Mech: m.CPUTime}
	case sig == unix.SIGXFSZ && m.FileSize != NoLimit:
		e.Limit = &limitHit{Kind: fileSizeLimit, Mech: m.FileSize}
	}
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		e.MaxRSS = ru.Maxrss // bytes on macOS
	}
	return e
}

// maxOpenFiles bounds descriptors per process.
const maxOpenFiles = 65536

// setDarwinRlimits applies the limits macOS holds with rlimits, to the
// reaper and so to the command it starts: RLIMIT_NPROC over the user's
// processes, RLIMIT_FSIZE, RLIMIT_CPU, no core dumps, and at most
// maxOpenFiles descriptors. Each is set hard too, so the command cannot
// raise it again.
func setDarwinRlimits(s reaperSpec) error {
	set := func(name string, res int, v uint64) error {
		var cur unix.Rlimit
		if unix.Getrlimit(res, &cur) == nil && cur.Max < v {
			v = cur.Max // never above the hard limit, which only root may raise
		}
		if err := unix.Setrlimit(res, &unix.Rlimit{Cur: v, Max: v}); err != nil {
			return fmt.Errorf("setrlimit(%s, %d): %w", name, v, err)
		}
		return nil
	}
	l, m := s.Limits, s.Mech
	var errs []error
	if m.Processes == ByUserRlimit && s.NProc > 0 {
		errs = append(errs, set("RLIMIT_NPROC", unix.RLIMIT_NPROC, s.NProc))
	}
	if m.FileSize == ByRlimit {
		errs = append(errs, set("RLIMIT_FSIZE", unix.RLIMIT_FSIZE, uint64(l.MaxFileBytes)))
	}
	if m.CPUTime == ByRlimit {
		// The soft limit sends SIGXCPU, which names the limit; the hard
		// limit a second later kills a program that ignores it.
		secs := uint64((l.CPUTime + time.Second - 1) / time.Second)
		if err := unix.Setrlimit(unix.RLIMIT_CPU, &unix.Rlimit{Cur: secs, Max: secs + 1}); err != nil {
			errs = append(errs, fmt.Errorf("setrlimit(RLIMIT_CPU, %d): %w", secs, err))
		}
	}
	errs = append(errs, set("RLIMIT_CORE", unix.RLIMIT_CORE, 0))
	var nofile unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &nofile) == nil {
		errs = append(errs, set("RLIMIT_NOFILE", unix.RLIMIT_NOFILE, min(nofile.Max, maxOpenFiles)))
	}
	if err := errors.Join(errs...); err != nil {
		return setupError("rlimits", err)
	}
	return nil
}

// The command's lookup inside the sandbox, as on Linux (exec_linux.go):
// a name with a slash is taken as it is, a bare name searched on PATH.

func envValue(env []string, name string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], name+"="); ok {
			return v
		}
	}
	return ""
}

func lookPath(file, pathEnv string) (string, *StartError) {
	if strings.Contains(file, "/") {
		if err := executable(file); err != nil {
			return "", startError(file, err)
		}
		return file, nil
	}
	var firstErr error
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, file)
		err := executable(p)
		if err == nil {
			return p, nil
		}
		if firstErr == nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENOTDIR) {
			firstErr = err // found, but not runnable: say so if nothing better turns up
		}
	}
	if firstErr != nil {
		return "", startError(file, firstErr)
	}
	return "", &StartError{Path: file, NotFound: true, Err: "executable file not found in PATH inside the sandbox", Errno: unix.ENOENT}
}

func executable(p string) error {
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return unix.EISDIR
	}
	return unix.Faccessat(unix.AT_FDCWD, p, unix.X_OK, unix.AT_EACCESS)
}

func startError(path string, err error) *StartError {
	se := &StartError{Path: path, Errno: errnoOf(err)}
	switch {
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR):
		se.NotFound, se.Err = true, "no such file inside the sandbox"
	case errors.Is(err, unix.EPERM):
		se.Err = "not allowed by the sandbox (the home directory, shared temporary directories and credentials are hidden)"
	case errors.Is(err, unix.EACCES):
		se.Err = "permission denied: not executable"
	case errors.Is(err, unix.EISDIR):
		se.Err = "is a directory"
	case errors.Is(err, unix.ENOEXEC), errors.Is(err, unix.EBADARCH), errors.Is(err, unix.EBADMACHO):
		se.Err = "exec format error: not a program this machine can run"
	default:
		se.Err = strings.TrimPrefix(unwrap(err).Error(), "exec: ")
	}
	return se
}

// readReaperReports reads report lines until r ends, delivering each; a
// line that is not a report, or longer than maxReaperLine, is skipped.
func readReaperReports(r io.Reader, deliver func(reaperReport)) {
	const maxReaperLine = policy.MaxArgBytes + 64<<10
	br := bufio.NewReaderSize(r, 64<<10)
	var line []byte
	tooLong := false
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > maxReaperLine {
			tooLong, line = true, line[:0]
		} else if !tooLong {
			line = append(line, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		var rep reaperReport
		if !tooLong && len(line) > 0 && json.Unmarshal(line, &rep) == nil {
			deliver(rep)
		}
		line, tooLong = line[:0], false
		if err != nil {
			return
		}
	}
}
