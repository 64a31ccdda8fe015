package sandbox

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
)

// Descriptors every re-execution receives besides stdio.
const (
	specFD   = 3 // the spec, JSON, read to EOF
	reportFD = 4 // reports, one JSON object per line
	// netFD is the helper's end of a unix socket on which it hands the
	// server the proxy's listening socket (network_linux.go); closed when
	// the network is the host's.
	netFD = 5
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
	// Filter is what the seccomp filter holds beyond its deny list,
	// without namespaces; zero in the full sandbox.
	Filter filterOptions `json:"filter,omitempty"`
	// HostNetwork says the helper shares the host's network namespace: it
	// has no loopback of its own to bring up, and no proxy.
	HostNetwork bool `json:"host_network,omitempty"`
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
	Ready bool `json:"ready,omitempty"`
	// Moved says what the helper moved out of the way of a mount point
	// it made (makeMountPoint), one report each.
	Moved *movedAside `json:"moved,omitempty"`
	Setup *SetupError `json:"setup,omitempty"`
	Start *StartError `json:"start,omitempty"`
	Exit  *exitReport `json:"exit,omitempty"`
}

type exitReport struct {
	Code     int       `json:"code"`
	Signal   int       `json:"signal"`
	TimedOut bool      `json:"timed_out,omitempty"`
	Limit    *limitHit `json:"limit,omitempty"`   // the limit that stopped it, if one did
	MaxRSS   int64     `json:"max_rss,omitempty"` // bytes, from wait4's rusage
}

// setStatus sets er's code and signal from a wait status: the exit code,
// or -1 and the signal that killed it.
func (er *exitReport) setStatus(ws unix.WaitStatus) {
	switch {
	case ws.Exited():
		er.Code = ws.ExitStatus()
	case ws.Signaled():
		er.Code = -1
		er.Signal = int(ws.Signal())
	}
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
		return setupError("setup", err)
	}
	return &SetupError{Op: op, Err: msg, Errno: errnoOf(err)}
}

// maxReportBytes bounds one report line. A report repeats at most the
// program's path, which the policy bounds with everything else a call
// brings (policy.MaxArgBytes).
const maxReportBytes = policy.MaxArgBytes + 64<<10

// readReports reads report lines from r until it ends, and returns them
// in order, but for Took reports, for which took is called instead. It
// reads to the end whatever comes, so the writer never blocks: a line that
// is not a report is skipped, and one over maxReportBytes is read and
// dropped.
func readReports(r io.Reader, took func()) []report {
	br := bufio.NewReaderSize(r, 64<<10)
	var rs []report
	var line []byte
	tooLong := false
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > maxReportBytes {
			tooLong, line = true, line[:0]
		} else if !tooLong {
			line = append(line, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue // the rest of this line
		}
		var rep report
		if !tooLong && len(line) > 0 && json.Unmarshal(line, &rep) == nil {
			if rep.Took {
				took()
			} else {
				rs = append(rs, rep)
			}
		}
		line, tooLong = line[:0], false
		if err != nil {
			return rs
		}
	}
}
