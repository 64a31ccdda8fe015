package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
)

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
	// ABI 0: the server found no Landlock and runs without it only where
	// the mounts hold the filesystem policy (Capabilities.Refusal); it says
	// so in --check and the tool's description.
	if s.LandlockABI >= 1 {
		if err := restrictLandlock(s.LandlockABI, s.Landlock); err != nil {
			fail(err)
		}
	}
	if err := installSeccomp(s.Filter); err != nil {
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
	if m.Memory == ByRlimit {
		errs = append(errs, set("RLIMIT_DATA", unix.RLIMIT_DATA, uint64(l.MemoryBytes)))
	}
	if m.Processes == ByRlimit {
		n := uint64(l.MaxProcesses)
		if m.WithoutNamespaces {
			// Without a user namespace of the sandbox's own, RLIMIT_NPROC
			// counts every process and thread of the caller's: the
			// command gets its limit above what the caller has now, within
			// the hard limit.
			n += uint64(userTasks())
			var cur unix.Rlimit
			if unix.Getrlimit(unix.RLIMIT_NPROC, &cur) == nil && cur.Max < n {
				n = cur.Max
			}
		}
		errs = append(errs, set("RLIMIT_NPROC", unix.RLIMIT_NPROC, n))
	}
	if m.FileSize == ByRlimit {
		errs = append(errs, set("RLIMIT_FSIZE", unix.RLIMIT_FSIZE, uint64(l.MaxFileBytes)))
	}
	if m.CPUTime == ByRlimit {
		// The soft limit sends SIGXCPU, which names the limit; the hard
		// limit a second later kills a program that ignores it.
		secs := cpuSeconds(l.CPUTime)
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

// cpuSeconds is RLIMIT_CPU's value for a limit of d: whole seconds, rounded
// up.
func cpuSeconds(d time.Duration) uint64 {
	return uint64((d + time.Second - 1) / time.Second)
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
	return "", notInPath(file)
}

// notInPath is the StartError of a bare name found nowhere on PATH.
func notInPath(file string) *StartError {
	return &StartError{Path: file, NotFound: true, Err: "executable file not found in PATH inside the sandbox", Errno: unix.ENOENT}
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
		se.NotFound, se.Err = true, "no such file inside the sandbox (the home directory, host /tmp and credentials are hidden)"
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		se.Err = "permission denied: not executable, or not allowed by the sandbox"
	case errors.Is(err, unix.EISDIR):
		se.Err = "is a directory"
	case errors.Is(err, unix.ENOEXEC):
		se.Err = "exec format error: not a program this machine can run"
	default:
		se.Err = err.Error()
	}
	return se
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
