package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
)

// ErrUnsupported is returned where this OS or architecture has no sandbox.
var ErrUnsupported = errors.New("no sandbox for this platform")

// Command is one program to run inside the sandbox.
type Command struct {
	// Path is the program: a bare name is looked up on PATH inside the
	// sandbox; a name with a slash is taken relative to the workspace.
	Path string
	Args []string // arguments, not including the program name

	// Stdin feeds the program. If nil, it reads EOF at once; the server's
	// own stdin is never inherited.
	Stdin io.Reader
	// Stdout and Stderr receive the output. If nil, it is discarded. An
	// *os.File is passed to the program as it is.
	Stdout, Stderr io.Writer

	// Timeout is the wall-clock limit. If zero, there is none.
	Timeout time.Duration

	// Signals, if non-nil, are passed on to the program as they arrive (the
	// one-shot command line forwards Ctrl-C this way).
	Signals <-chan os.Signal
}

// Result is how a command ended.
type Result struct {
	ExitCode int    // -1 when it did not exit on its own (signal, timeout, cancel)
	Signal   string // name of the signal that ended it ("SIGKILL"), or ""
	SignalNo int    // its number, or 0
	TimedOut bool
	Canceled bool // the context ended first: a cancelled call or a server shutdown
	Duration time.Duration
	// Limit names the limit that stopped the command, with its value and
	// mechanism ("memory limit 4 GiB (cgroup)"), or is empty.
	Limit string
	// MemoryPeakBytes is the command's peak memory: its whole cgroup's, or
	// else its largest process's resident size; 0 if unknown.
	MemoryPeakBytes int64
	Notes           []string // what the sandbox did that the model should know
}

// SetupError means the sandbox could not be built for this call; the
// command did not run. It crosses from the sandbox's own processes to the
// server as JSON, so it holds text, and the errno for errors.Is.
type SetupError struct {
	Op    string        // "mount", "landlock_restrict_self", ...
	Err   string        // what went wrong
	Errno syscall.Errno `json:",omitempty"` // the error number, if one caused it; else 0
	// Fix says how to make the machine allow it, where that is known; else
	// empty.
	Fix string `json:",omitempty"`
}

func (e *SetupError) Error() string {
	if e.Fix != "" {
		return fmt.Sprintf("sandbox setup failed: %s: %s; to fix: %s", e.Op, e.Err, e.Fix)
	}
	return fmt.Sprintf("sandbox setup failed: %s: %s", e.Op, e.Err)
}

// Unwrap returns e.Errno, or nil if there is none.
func (e *SetupError) Unwrap() error { return errnoError(e.Errno) }

// setupError is the SetupError of operation op failing with err.
func setupError(op string, err error) *SetupError {
	return &SetupError{Op: op, Err: err.Error(), Errno: errnoOf(err)}
}

// StartError means the sandbox was built but the program could not start:
// not found, not executable, or hidden by the sandbox.
type StartError struct {
	Path     string
	Err      string        // what went wrong
	NotFound bool          // no such program
	Errno    syscall.Errno `json:",omitempty"` // the error number exec or the lookup met; else 0
}

func (e *StartError) Error() string {
	// A path far longer than any real one is not worth echoing whole.
	const most = 256
	if len(e.Path) > most {
		return fmt.Sprintf("failed to start %q... (a path of %d bytes): %s", e.Path[:most], len(e.Path), e.Err)
	}
	return fmt.Sprintf("failed to start %q: %s", e.Path, e.Err)
}

// Unwrap returns e.Errno, or nil if there is none.
func (e *StartError) Unwrap() error { return errnoError(e.Errno) }

// Sandbox runs commands under one policy. It is safe for concurrent use.
type Sandbox struct {
	pol  *policy.Policy
	caps Capabilities
	mech Mechanisms
	os   platform // the OS half, prepared once
}

// New prepares a sandbox for p on a machine with caps. It refuses what the
// machine cannot hold; [Sandbox.DryRun] proves the rest.
func New(p *policy.Policy, caps Capabilities) (*Sandbox, error) {
	if r := caps.Refusal(); r != nil {
		return nil, r
	}
	if caps.WithoutNamespaces && os.Getuid() == 0 {
		return nil, rootWithoutNamespaces
	}
	mech, r := mechanisms(p.Limits, caps, os.Getuid())
	if r != nil {
		return nil, r
	}
	s := &Sandbox{pol: p, caps: caps, mech: mech}
	plat, err := newPlatform(p, &s.caps, &s.mech)
	if err != nil {
		return nil, err
	}
	s.os = plat
	return s, nil
}

// Mechanisms names what holds each limit.
func (s *Sandbox) Mechanisms() Mechanisms { return s.mech }

// Caveats says, in sentences for the tool's description, where the sandbox
// holds less than the policy describes: a limit held per process, a
// missing defence-in-depth layer; empty when it holds all of it.
func (s *Sandbox) Caveats() string {
	var out []string
	for _, c := range []string{s.mech.Caveats(), s.caps.MissingLayer()} {
		if c != "" {
			out = append(out, c)
		}
	}
	if s.caps.WithoutNamespaces {
		out = append(out, strings.Join(reducedCaveats(s.caps.LandlockABI, s.pol.HostNetwork), " "))
	}
	return strings.Join(out, "\n")
}

// Capabilities is what the machine was found to enforce, as adjusted when
// the sandbox was prepared (a delegated cgroup that proved unusable).
func (s *Sandbox) Capabilities() Capabilities { return s.caps }

// DryRun builds the sandbox and applies every restriction, then stops short
// of running a program: a policy that cannot be built here fails now rather
// than on the first call.
func (s *Sandbox) DryRun() error {
	_, err := s.os.run(context.Background(), &Command{}, true)
	return err
}

// KeepSpare makes the sandbox keep a helper started ahead of the next call,
// from now until Close: a served call then skips most of its start-up.
func (s *Sandbox) KeepSpare() { s.os.keepSpare() }

// Close ends what the sandbox keeps running between calls. Calls may still
// run afterwards, without a spare.
func (s *Sandbox) Close() { s.os.close() }

// Run runs c and reports how it ended. The error is a *SetupError or a
// *StartError when the program did not run; a program that ran and failed
// is a Result with its exit code. When ctx ends, or c.Timeout passes, every
// process of the call is killed before Run returns.
func (s *Sandbox) Run(ctx context.Context, c *Command) (Result, error) {
	return s.os.run(ctx, c, false)
}

// unwrap returns the errno inside a *fs.PathError, or err.
func unwrap(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// bug marks a state that cannot happen, so it reads as ours to fix.
func bug(err error) error {
	return fmt.Errorf("bug in nanosandbox-mcp (please report): %w", err)
}

// errnoOf returns the error number in err's chain, or 0.
func errnoOf(err error) syscall.Errno {
	var errno syscall.Errno
	errors.As(err, &errno)
	return errno
}

// errnoError returns errno as an error, or nil for 0.
func errnoError(errno syscall.Errno) error {
	if errno == 0 {
		return nil
	}
	return errno
}
