package sandbox

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
)

// Descriptors every re-execution receives besides stdio.
const (
	specFD   = 3 // the spec, JSON, read to EOF
	reportFD = 4 // reports, one JSON object per line
)

// spec is everything the helper and the exec stage need for one call.
type spec struct {
	Ops         []mountOp     `json:"ops"`
	UID         int           `json:"uid"` // the caller on the host: the command runs as them
	GID         int           `json:"gid"`
	Dir         string        `json:"dir"`
	Path        string        `json:"path"`
	Args        []string      `json:"args"`
	Env         []string      `json:"env"`
	LandlockABI int           `json:"landlock_abi"`
	Landlock    landlockRules `json:"landlock"`
	Limits      policy.Limits `json:"limits"`
	Mech        Mechanisms    `json:"mech"`
	// Timeout is enforced by the helper, which can still say what the
	// command was doing (the server kills it later if it does not).
	Timeout time.Duration `json:"timeout,omitempty"`
	// Probe builds everything, applies every restriction, then exits 0
	// instead of running a program: a dry run that proves the policy holds.
	Probe bool `json:"probe,omitempty"`
	// Root is the sandbox's root as the helper sees it once built; the
	// exec stage, started before it was, checks that its own is the same.
	Root *rootID `json:"root,omitempty"`
}

// rootID identifies a root directory: the mount, not only the inode, since
// the sandbox's root is a bind of the host's.
type rootID struct {
	Mount uint64 `json:"mount"`
	Dev   uint64 `json:"dev"`
	Ino   uint64 `json:"ino"`
}

// currentRoot identifies this process's root directory.
func currentRoot() (*rootID, error) {
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, "/", 0, unix.STATX_INO|unix.STATX_MNT_ID, &st); err != nil {
		return nil, fmt.Errorf("statx /: %w", err)
	}
	if st.Mask&unix.STATX_MNT_ID == 0 {
		return nil, errors.New("statx /: no mount id (Linux 5.8+)")
	}
	return &rootID{Mount: st.Mnt_id, Dev: unix.Mkdev(st.Dev_major, st.Dev_minor), Ino: st.Ino}, nil
}

// report is one message from a child to the server.
type report struct {
	// Took says the helper has read its spec: one that dies before it
	// never had the call, which can then go to another.
	Took bool `json:"took,omitempty"`
	// Ready says the exec stage has applied every restriction and is about
	// to run the command (or, for a probe, to exit 0): an exit reported
	// without it is the exec stage's, not the command's.
	Ready bool        `json:"ready,omitempty"`
	Setup *SetupError `json:"setup,omitempty"`
	Start *StartError `json:"start,omitempty"`
	Exit  *exitReport `json:"exit,omitempty"`
}

type exitReport struct {
	Code     int    `json:"code"`
	Signal   int    `json:"signal"`
	TimedOut bool   `json:"timed_out,omitempty"`
	Limit    string `json:"limit,omitempty"`   // the limit that stopped it, if one did
	MaxRSS   int64  `json:"max_rss,omitempty"` // bytes, from wait4's rusage
}

func childMain(stage string) {
	switch stage {
	case "noop":
		os.Exit(0)
	case "helper":
		helperMain()
	case "exec":
		execMain()
	}
	fmt.Fprintf(os.Stderr, "nanosandbox-mcp: unknown sandbox stage %q\n", stage)
	os.Exit(255)
}

func readSpec() (*spec, []byte, error) {
	f := os.NewFile(specFD, "spec")
	raw, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return nil, nil, fmt.Errorf("read spec: %w", err)
	}
	var s spec
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, raw, fmt.Errorf("decode spec: %w", err)
	}
	return &s, raw, nil
}

func sendReport(w *os.File, r report) {
	b, _ := json.Marshal(r)
	// One write: below PIPE_BUF (all but a start report with a long path)
	// it is never interleaved with another stage's.
	w.Write(append(b, '\n'))
}

func asSetupError(err error) *SetupError {
	var se *SetupError
	if errors.As(err, &se) {
		return se
	}
	op, msg, ok := strings.Cut(err.Error(), ": ")
	if !ok {
		return &SetupError{Op: "setup", Err: err.Error()}
	}
	return &SetupError{Op: op, Err: msg}
}

// helperMain is pid 1 of the sandbox's namespaces, uid 0 in its own user
// namespace. It builds the mount tree, brings up loopback, starts the exec
// stage in a nested user namespace, forwards signals and reaps. When the
// command exits it reports and exits, and the kernel kills whatever is left
// in the pid namespace.
func helperMain() {
	rep := os.NewFile(reportFD, "report")
	fail := func(err error) {
		sendReport(rep, report{Setup: asSetupError(err)})
		os.Exit(255)
	}
	// Not dumpable: the command runs as the same host uid, and must not
	// read or write this process's memory, environment or descriptors
	// through /proc/1 (this process holds every capability of the outer
	// user namespace).
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		fail(fmt.Errorf("prctl(PR_SET_DUMPABLE): %w", err))
	}
	// Threads the helper will need are made now: once the command runs, a
	// fork bomb can leave no pid for a new one (pid_max and pids.max count
	// threads), and the Go runtime aborts when it cannot make a thread.
	// Idle threads are reused instead. (Before the spec, which a helper
	// started ahead of its call waits for.)
	prewarmThreads(spareThreads)
	// A static binary (every release) starts its exec stage now too,
	// which then waits for its spec. A nested user namespace needs this
	// process's root to be its mount namespace's: the pivot into the
	// scratch root comes first. A dynamic one (a cgo build: go run on a
	// machine with a C compiler) needs its ELF interpreter, which the
	// scratch root lacks: its exec stage starts once the root is built.
	early := isStatic()
	if err := enterScratch(); err != nil {
		fail(err)
	}
	if err := attachIdmapped(); err != nil { // a root caller's grants, before anything starts
		fail(err)
	}
	specR, specW, err := os.Pipe()
	if err != nil {
		fail(fmt.Errorf("pipe: %w", err))
	}
	var proc *os.Process
	startStage := func() {
		proc, err = startExecStage(specR, rep)
		specR.Close()
		if err != nil {
			fail(err)
		}
	}
	if early {
		startStage()
	}
	s, _, err := readSpec()
	if err != nil {
		fail(err)
	}
	// An exec stage that ended while this helper waited cannot run the
	// call: end without taking it, and the server hands it to another.
	if early {
		var ws unix.WaitStatus
		if pid, _ := unix.Wait4(proc.Pid, &ws, unix.WNOHANG, nil); pid == proc.Pid {
			fail(errors.New("exec stage: it ended before its call"))
		}
	}
	sendReport(rep, report{Took: true})
	if err := buildRoot(s.Ops, s.Limits.TmpBytes); err != nil {
		fail(err)
	}
	if err := loopbackUp(); err != nil {
		fail(err)
	}
	if s.Mech.Processes == "pid namespace" {
		// Root is not bound by RLIMIT_NPROC; this namespace's pid_max is
		// (Linux 6.14+). See reservedPids for the margin.
		pidMax := strconv.Itoa(s.Limits.MaxProcesses + reservedPids)
		if err := os.WriteFile("/proc/sys/kernel/pid_max", []byte(pidMax), 0); err != nil {
			fail(fmt.Errorf("write /proc/sys/kernel/pid_max %s: %w", pidMax, unwrap(err)))
		}
	}
	if err := readOnlyProc(); err != nil { // after pid_max, the one sysctl written
		fail(err)
	}
	// Nothing inherited above the report pipe reaches the command.
	if err := unix.CloseRange(reportFD+1, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		fail(fmt.Errorf("close_range: %w", err))
	}
	if !early {
		startStage()
	}
	// An exec stage started early had its root moved by the pivots
	// (pivot_root moves every process whose root was the old one); it
	// checks that against this.
	if s.Root, err = currentRoot(); err != nil {
		fail(err)
	}
	raw, err := json.Marshal(s)
	if err != nil {
		fail(bug(err))
	}
	if _, err := specW.Write(raw); err != nil {
		fail(fmt.Errorf("hand the exec stage its spec (did it end before the call?): %w", err))
	}
	specW.Close()

	if s.Mech.Processes == "rlimit" || s.Mech.Processes == "pid namespace" {
		if tasks, err = newTaskCounter(s.Limits.MaxProcesses); err != nil {
			fail(err)
		}
		// Nothing reports a fork refused by RLIMIT_NPROC or pid_max, and a
		// fork bomb's processes may be gone by the end: sample the count
		// every 20ms, every millisecond while it is past half the limit,
		// and whenever an orphan is reaped. A shell fork bomb can rise to
		// the limit and die out within 10ms, between two timed samples,
		// but its processes are orphans: this process reaps them while the
		// bomb is at its peak.
		go func() {
			t := time.NewTimer(processSampleInterval)
			for {
				if tasks.sample() >= s.Limits.MaxProcesses/2 {
					t.Reset(time.Millisecond)
				} else {
					t.Reset(processSampleInterval)
				}
				<-t.C
			}
		}()
	}
	var once sync.Once
	finish := func(er *exitReport) {
		once.Do(func() {
			sendReport(rep, report{Exit: er})
			os.Exit(0) // the kernel kills what is left in the pid namespace
		})
	}
	if s.Timeout > 0 {
		time.AfterFunc(s.Timeout, func() {
			finish(&exitReport{Code: -1, Signal: int(unix.SIGKILL), TimedOut: true, Limit: s.limitHit(nil, nil)})
		})
	}

	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT)
	go func() {
		for sig := range sigs {
			proc.Signal(sig)
		}
	}()

	for {
		var ws unix.WaitStatus
		var ru unix.Rusage
		pid, err := unix.Wait4(-1, &ws, 0, &ru)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			fail(fmt.Errorf("wait4: %w", err))
		}
		if pid != proc.Pid { // an orphan reparented to us
			if tasks != nil {
				tasks.sampleAfter(200 * time.Microsecond)
			}
			continue
		}
		er := &exitReport{MaxRSS: ru.Maxrss * 1024}
		switch {
		case ws.Exited():
			er.Code = ws.ExitStatus()
		case ws.Signaled():
			er.Code = -1
			er.Signal = int(ws.Signal())
		}
		er.Limit = s.limitHit(&ws, &ru)
		finish(er)
		select {} // finish exits; a timeout may be exiting already
	}
}

// isStatic reports whether this binary runs without an ELF interpreter. It
// reads /proc/self/exe, so it runs before enterScratch.
func isStatic() bool {
	f, err := elf.Open("/proc/self/exe")
	if err != nil {
		return false // the later, always-working order
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return false
		}
	}
	return true
}

// startExecStage starts the exec stage in a nested user namespace that maps
// the caller (this process's arguments: uid, gid) back. It reads its spec
// from specR, and reports on rep. It runs after enterScratch.
func startExecStage(specR, rep *os.File) (*os.Process, error) {
	if len(os.Args) != 3 {
		return nil, bug(fmt.Errorf("helper arguments %q, want uid and gid", os.Args[1:]))
	}
	uid, err1 := strconv.Atoi(os.Args[1])
	gid, err2 := strconv.Atoi(os.Args[2])
	if err := errors.Join(err1, err2); err != nil {
		return nil, bug(fmt.Errorf("helper arguments: %w", err))
	}
	proc, err := os.StartProcess("/proc/self/exe", []string{"nanosandbox-mcp: exec"}, &os.ProcAttr{
		Dir:   "/",
		Env:   []string{childEnv + "=exec"},
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr, specR, rep},
		Sys: &syscall.SysProcAttr{
			// The nested user namespace maps the caller back: the command
			// runs as them, with no capabilities in the namespace that owns
			// the mounts, so the mount tree is locked.
			Cloneflags:                 syscall.CLONE_NEWUSER,
			UidMappings:                []syscall.SysProcIDMap{{ContainerID: uid, HostID: 0, Size: 1}},
			GidMappings:                []syscall.SysProcIDMap{{ContainerID: gid, HostID: 0, Size: 1}},
			GidMappingsEnableSetgroups: false,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("start exec stage: %w", err)
	}
	return proc, nil
}

// limitHit names the limit that stopped the command, from how it ended
// (ws, ru: nil on a timeout) and what is left in the sandbox: a signal
// that only a limit sends, a process count at its limit, a full tmpfs, or a
// failure at a peak near the per-process memory limit. Limits held by a
// cgroup are read from the cgroup by the server instead.
func (s *spec) limitHit(ws *unix.WaitStatus, ru *unix.Rusage) string {
	l, m := s.Limits, s.Mech
	// The signal that ended the program, or the one a shell reports as
	// its status 128+N.
	var sig unix.Signal
	switch {
	case ws != nil && ws.Signaled():
		sig = ws.Signal()
	case ws != nil && ws.Exited() && ws.ExitStatus() > 128:
		sig = unix.Signal(ws.ExitStatus() - 128)
	}
	if sig != 0 {
		switch sig {
		case unix.SIGXCPU:
			if m.CPUTime != "" {
				return fmt.Sprintf("CPU time limit %s per process (%s)", l.CPUTime, m.CPUTime)
			}
		case unix.SIGXFSZ:
			if m.FileSize != "" {
				return fmt.Sprintf("file size limit %s (%s)", policy.FormatSize(l.MaxFileBytes), m.FileSize)
			}
		}
	}
	if (m.Processes == "rlimit" || m.Processes == "pid namespace") && tasks.peak()*10 >= l.MaxProcesses*9 {
		return fmt.Sprintf("process limit %d (%s)", l.MaxProcesses, m.Processes)
	}
	if m.Tmp != "" {
		for _, d := range append(append([]string(nil), policy.PrivateDirs...), "/dev/shm") {
			var st unix.Statfs_t
			if unix.Statfs(d, &st) == nil && st.Type == unix.TMPFS_MAGIC && st.Blocks > 0 && st.Bavail*100 < st.Blocks {
				return fmt.Sprintf("%s size limit %s (%s)", d, policy.FormatSize(l.TmpBytes), m.Tmp)
			}
		}
	}
	abnormal := ws != nil && (ws.Signaled() || ws.Exited() && ws.ExitStatus() != 0)
	if m.Memory == "rlimit" && abnormal && ru != nil && ru.Maxrss*1024*4 >= l.MemoryBytes*3 {
		return fmt.Sprintf("memory limit %s per process (%s)", policy.FormatSize(l.MemoryBytes), m.Memory)
	}
	return ""
}

// spareThreads is how many idle threads the helper keeps for itself: its
// wait, its timer, its signals and its sampler, with room to spare.
const spareThreads = 8

// prewarmThreads makes the Go runtime start n threads, then leaves them
// idle, where it takes threads from before it makes new ones.
func prewarmThreads(n int) {
	var started, release sync.WaitGroup
	started.Add(n)
	release.Add(1)
	for range n {
		go func() {
			runtime.LockOSThread() // each on a thread of its own
			started.Done()
			release.Wait()
			runtime.UnlockOSThread() // then the thread goes idle, not away
		}()
	}
	started.Wait()
	release.Done()
}

// processSampleInterval is how often the helper counts the sandbox's tasks
// when the process limit is one that reports nothing itself.
const processSampleInterval = 20 * time.Millisecond

// tasks counts the command's tasks when the process limit is one that
// reports nothing itself.
var tasks *taskCounter

// taskCounter counts the command's tasks, the processes and threads in
// this pid namespace but the helper (pid 1), and keeps the most it has
// seen. It reads /proc through one open descriptor into one buffer, so a
// count stays quick while a fork bomb competes for the CPU.
type taskCounter struct {
	mu    sync.Mutex
	proc  int
	buf   []byte
	pids  []int
	limit int
	most  int
	last  time.Time
}

func newTaskCounter(limit int) (*taskCounter, error) {
	fd, err := unix.Open("/proc", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open /proc: %w", err)
	}
	return &taskCounter{proc: fd, buf: make([]byte, 32<<10), limit: limit}, nil
}

// sample counts the tasks now and returns the count.
func (c *taskCounter) sample() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.countLocked()
}

// sampleAfter counts the tasks unless the last count is more recent than d.
func (c *taskCounter) sampleAfter(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.last) >= d {
		c.countLocked()
	}
}

// peak returns the most tasks seen at once, counting them once more.
func (c *taskCounter) peak() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.countLocked()
	return c.most
}

// countLocked counts the tasks. From half the limit on, threads are not
// counted: a fork bomb's processes have one each, and reading every
// process's thread count would slow the count down when it must be quick.
func (c *taskCounter) countLocked() int {
	c.pids = c.pids[:0]
	if _, err := unix.Seek(c.proc, 0, io.SeekStart); err == nil {
		for {
			n, err := unix.Getdents(c.proc, c.buf)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil || n <= 0 {
				break
			}
			c.pids = appendPids(c.pids, c.buf[:n])
		}
	}
	n := len(c.pids)
	if n < c.limit/2 {
		n = 0
		for _, pid := range c.pids {
			n += max(threadsOf(c.proc, pid), 1)
		}
	}
	c.most = max(c.most, n)
	c.last = time.Now()
	return n
}

// appendPids appends the process ids among the linux_dirent64 records in
// buf, leaving out pid 1.
func appendPids(pids []int, buf []byte) []int {
	for len(buf) >= 19 {
		reclen := int(binary.NativeEndian.Uint16(buf[16:18]))
		if reclen < 19 || reclen > len(buf) {
			break
		}
		name := buf[19:reclen]
		pid := 0
		for _, b := range name {
			if b == 0 {
				break
			}
			if b < '0' || b > '9' {
				pid = -1
				break
			}
			pid = pid*10 + int(b-'0')
		}
		if pid > 1 {
			pids = append(pids, pid)
		}
		buf = buf[reclen:]
	}
	return pids
}

// threadsOf reads the thread count of process pid from its stat file, or
// returns 0 when it cannot.
func threadsOf(proc, pid int) int {
	fd, err := unix.Openat(proc, strconv.Itoa(pid)+"/stat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0
	}
	defer unix.Close(fd)
	var b [512]byte
	n, err := unix.Read(fd, b[:])
	if err != nil || n <= 0 {
		return 0
	}
	return statThreads(b[:n])
}

// statThreads returns num_threads, the 20th field of a /proc/PID/stat
// line, or 0. The second field, the command name in parentheses, may hold
// spaces and parentheses itself, so fields are counted from the last ')'.
func statThreads(stat []byte) int {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0
	}
	fields := strings.Fields(string(stat[i+1:]))
	if len(fields) < 18 {
		return 0
	}
	n, _ := strconv.Atoi(fields[17]) // fields[0] is the 3rd field, state
	return n
}

// execMain runs in the nested user namespace, as the caller. It applies the
// last restrictions on its own thread and execs the command: rlimits,
// capabilities dropped, no_new_privs, Landlock, then seccomp last, so setup
// needs no allowances.
func execMain() {
	runtime.LockOSThread()
	rep := os.NewFile(reportFD, "report")
	fail := func(err error) {
		sendReport(rep, report{Setup: asSetupError(err)})
		os.Exit(255)
	}
	s, raw, err := readSpec()
	if len(raw) == 0 {
		os.Exit(255) // the helper ended before the call came: nothing to report
	}
	if err != nil {
		fail(err)
	}
	// This process started before the helper built the sandbox's root and
	// pivoted into it; the pivots moved its root along. Never run a
	// command anywhere else.
	if root, err := currentRoot(); err != nil {
		fail(err)
	} else if s.Root == nil || *root != *s.Root {
		fail(&SetupError{Op: "exec stage root", Err: fmt.Sprintf("this process's root %+v is not the sandbox's %+v", root, s.Root)})
	}
	if err := setRlimits(s.Limits, s.Mech); err != nil {
		fail(err)
	}
	if err := unix.Chdir(s.Dir); err != nil {
		fail(fmt.Errorf("chdir %q: %w", s.Dir, err))
	}
	path, serr := lookPath(s.Path, envValue(s.Env, "PATH"))
	if err := dropCapabilities(); err != nil {
		fail(err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		fail(fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err))
	}
	if err := restrictLandlock(s.LandlockABI, s.Landlock); err != nil {
		fail(err)
	}
	if err := installSeccomp(); err != nil {
		fail(err)
	}
	sendReport(rep, report{Ready: true})
	if s.Probe {
		os.Exit(0)
	}
	if serr != nil {
		sendReport(rep, report{Start: serr})
		os.Exit(127)
	}
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		fail(fmt.Errorf("close_range: %w", err))
	}
	err = unix.Exec(path, append([]string{s.Path}, s.Args...), s.Env)
	se := startError(s.Path, err)
	sendReport(rep, report{Start: se})
	if se.NotFound {
		os.Exit(127)
	}
	os.Exit(126)
}

// maxOpenFiles bounds descriptors per process (kernel memory).
const maxOpenFiles = 65536

// setRlimits applies the limits held by rlimits, in this nested user
// namespace: RLIMIT_NPROC counts the caller's processes and threads here,
// that is, in this sandbox only. RLIMIT_DATA, not RLIMIT_AS: node cannot
// start under a 512 MiB address-space limit but runs under a 512 MiB data
// limit. No core dumps.
func setRlimits(l policy.Limits, m Mechanisms) error {
	set := func(name string, res int, v uint64) error {
		if err := unix.Setrlimit(res, &unix.Rlimit{Cur: v, Max: v}); err != nil {
			return fmt.Errorf("setrlimit(%s, %d): %w", name, v, err)
		}
		return nil
	}
	var errs []error
	if m.Memory == "rlimit" {
		errs = append(errs, set("RLIMIT_DATA", unix.RLIMIT_DATA, uint64(l.MemoryBytes)))
	}
	if m.Processes == "rlimit" {
		errs = append(errs, set("RLIMIT_NPROC", unix.RLIMIT_NPROC, uint64(l.MaxProcesses)))
	}
	if m.FileSize == "rlimit" {
		errs = append(errs, set("RLIMIT_FSIZE", unix.RLIMIT_FSIZE, uint64(l.MaxFileBytes)))
	}
	if m.CPUTime == "rlimit" {
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
		v := min(nofile.Max, maxOpenFiles)
		errs = append(errs, set("RLIMIT_NOFILE", unix.RLIMIT_NOFILE, v))
	}
	return errors.Join(errs...)
}

func envValue(env []string, name string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], name+"="); ok {
			return v
		}
	}
	return ""
}

// lookPath finds the program as a shell would: a name with a slash is taken
// as it is (relative to the working directory), a bare name is searched on
// PATH.
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
	return "", &StartError{Path: file, NotFound: true, Err: "executable file not found in PATH inside the sandbox"}
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
	switch {
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR):
		return &StartError{Path: path, NotFound: true, Err: "no such file inside the sandbox (the home directory, host /tmp and credentials are hidden)"}
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		return &StartError{Path: path, Err: "permission denied: not executable, or not allowed by the sandbox"}
	case errors.Is(err, unix.EISDIR):
		return &StartError{Path: path, Err: "is a directory"}
	case errors.Is(err, unix.ENOEXEC):
		return &StartError{Path: path, Err: "exec format error: not a program this machine can run"}
	default:
		return &StartError{Path: path, Err: err.Error()}
	}
}

// dropCapabilities leaves the command no capability even when the caller is
// root (uid 0 in the nested namespace would otherwise regain them all at
// exec): securebits locked so root is not special, the bounding and ambient
// sets emptied, then every set cleared.
func dropCapabilities() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if unix.Getuid() != 0 {
		// A caller other than root lost every capability at the exec into
		// this stage (and no_new_privs, set next, keeps it so): check it.
		if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
			return fmt.Errorf("prctl(PR_CAP_AMBIENT_CLEAR_ALL): %w", err)
		}
		if err := unix.Capget(&hdr, &data[0]); err != nil {
			return fmt.Errorf("capget: %w", err)
		}
		for _, d := range data {
			if d.Effective|d.Permitted|d.Inheritable != 0 {
				return bug(fmt.Errorf("capabilities left after exec as uid %d: %+v", unix.Getuid(), data))
			}
		}
		return nil
	}
	// <linux/securebits.h>: each SECURE_* bit number, and its _LOCKED twin
	// one above.
	const (
		secNoRoot            = 1 << 0
		secNoRootLocked      = 1 << 1
		secNoSetuidFixup     = 1 << 2
		secNoSetuidFixupLock = 1 << 3
		secKeepCapsLocked    = 1 << 5
		secNoAmbientRaise    = 1 << 6
		secNoAmbientLocked   = 1 << 7
	)
	const bits = secNoRoot | secNoRootLocked | secNoSetuidFixup | secNoSetuidFixupLock |
		secKeepCapsLocked | secNoAmbientRaise | secNoAmbientLocked
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, bits, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_SECUREBITS): %w", err)
	}
	last := lastCap()
	for c := 0; c <= last; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("prctl(PR_CAPBSET_DROP, %d): %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_CAP_AMBIENT_CLEAR_ALL): %w", err)
	}
	data = [2]unix.CapUserData{}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	return nil
}

func lastCap() int {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return 63
	}
	var n int
	if _, err := fmt.Sscan(string(b), &n); err != nil {
		return 63
	}
	return n
}

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
