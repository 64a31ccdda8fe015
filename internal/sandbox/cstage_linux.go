package sandbox

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/nanosandbox/nanosandbox-mcp/internal/sandbox/cstage"
)

// The C exec stage (cstage/src/stage.c) does what execMain does, in the
// same order, without a second start of this Go binary: the Go side
// computes everything (the rlimits, the program's candidate paths, the
// Landlock ruleset and rules for this kernel's ABI, the seccomp program's
// bytes and flags) and hands it one flat binary block; the stage applies
// it and reports in fixed binary records, which the helper in C passes on
// to the server, and the server reads with the Go stage's messages
// (cStageCall, chelper_linux.go).
//
// Where it comes from: the blob built by cstage/build.sh and embedded for
// this architecture, named after the hash of its source (cstage's sums.go,
// which build.sh writes and a test holds to the sources), so a stale one
// is never used. The server puts it, once, into a sealed memfd (written once,
// then sealed against every write, resize and further seal) which each
// helper in C inherits, and from which it starts the stage through
// /proc/self/fd/N, this pid namespace's /proc. Only the helper in C starts
// it: without both blobs (a plain go build, go install or go test; a tree
// where build.sh last ran on other sources than sums.go's), or where a memfd cannot be
// made executable, the Go helper runs with the Go stage.
//
// Why it holds what the Go stage held: the same restrictions, in the same
// order, from values computed by the same Go code (landlockAccessFor,
// seccompProgram, the limits of setRlimits), applied by the same system
// calls. The memfd is close-on-exec in the server and in the helper: the
// stage, executed from it, does not inherit it, and its close_range before
// execve leaves the command nothing above stdio; the helper is not
// dumpable, so the command cannot open it through /proc/1/fd either; and
// sealed, it could not be changed if it were reached. The stage is built
// from this repository's source by a pinned compiler, byte for byte
// reproducibly. The helper is trusted; the block is still bounds-checked
// by the stage, which reads it as data and never parses text.
//
// Where the two differ, and why it does not matter: the stage drops every
// capability number up to 63 from the bounding set, ignoring EINVAL past
// the kernel's last, where the Go stage reads cap_last_cap first (the same
// set results); a seccomp program that cannot be built (no reviewed table
// for the architecture, which has no C stage either) fails the call in the
// helper, before the stage's earlier steps. Not used without namespaces
// (reducedhelper_linux.go), whose stage counts the caller's processes for
// RLIMIT_NPROC as it starts.

// cStageFile returns the sealed memfd holding the C exec stage for this
// architecture, made at the first call, or nil when there is none.
var cStageFile = sync.OnceValue(func() *os.File {
	blob := cstage.Blob(runtime.GOARCH)
	if blob == nil {
		return nil
	}
	f, err := cstage.SealedMemfd("nanosandbox-mcp: exec", blob)
	if err != nil {
		return nil // the Go stage does the same, slower
	}
	return f
})

// cStageCall is what the helper needs to turn the stage's reports about
// one call into its own.
type cStageCall struct {
	s       *spec
	slash   bool // the program's name has a slash: no PATH search
	rlimits []cRlimit
	rules   []string // the Landlock rules' paths, in order
}

// cRlimit is one limit the stage sets.
type cRlimit struct {
	name      string
	resource  int
	cur, max  uint64
	nofileCap bool // cur and max are the hard limit found, at most max
}

// The instruction block, as stage.c's struct header and the arrays it
// points into, all native-endian (amd64 and arm64: little).
const (
	blockMagic      = 0x5342534e
	blockHeaderSize = 208
	blockProbe      = 1
	blockLandlock   = 2
	blockSlash      = 4
	rlimitNofileCap = 1
)

// cRlimits lists the limits setRlimits sets in a sandbox with namespaces,
// in its order.
func cRlimits(s *spec) []cRlimit {
	l, m := s.Limits, s.Mech
	var rs []cRlimit
	add := func(name string, res int, v uint64) {
		rs = append(rs, cRlimit{name: name, resource: res, cur: v, max: v})
	}
	if m.Memory == ByRlimit {
		add("RLIMIT_DATA", unix.RLIMIT_DATA, uint64(l.MemoryBytes))
	}
	if m.Processes == ByRlimit {
		add("RLIMIT_NPROC", unix.RLIMIT_NPROC, uint64(l.MaxProcesses))
	}
	if m.FileSize == ByRlimit {
		add("RLIMIT_FSIZE", unix.RLIMIT_FSIZE, uint64(l.MaxFileBytes))
	}
	if m.CPUTime == ByRlimit {
		secs := cpuSeconds(l.CPUTime)
		rs = append(rs, cRlimit{name: "RLIMIT_CPU", resource: unix.RLIMIT_CPU, cur: secs, max: secs + 1})
	}
	add("RLIMIT_CORE", unix.RLIMIT_CORE, 0)
	rs = append(rs, cRlimit{name: "RLIMIT_NOFILE", resource: unix.RLIMIT_NOFILE, cur: maxOpenFiles, max: maxOpenFiles, nofileCap: true})
	return rs
}

// encodeBlock lays s out as the C stage's instruction block.
func encodeBlock(s *spec) ([]byte, *cStageCall, error) {
	if s.Mech.WithoutNamespaces {
		return nil, nil, bug(errors.New("the C exec stage runs only in a sandbox with namespaces"))
	}
	if s.Root == nil {
		return nil, nil, bug(errors.New("exec stage instructions without the sandbox's root"))
	}
	call := &cStageCall{s: s, slash: strings.Contains(s.Path, "/"), rlimits: cRlimits(s)}
	var cand []string
	if call.slash {
		cand = []string{s.Path}
	} else {
		for _, dir := range filepath.SplitList(envValue(s.Env, "PATH")) {
			if dir == "" {
				dir = "."
			}
			cand = append(cand, filepath.Join(dir, s.Path))
		}
	}
	filter, err := stageFilter(s.Filter)
	if err != nil {
		return nil, nil, err
	}

	var b blockWriter
	b.buf = make([]byte, blockHeaderSize, 4096)
	var flags uint64
	if s.Probe {
		flags |= blockProbe
	}
	if call.slash {
		flags |= blockSlash
	}
	hdr := make([]uint64, blockHeaderSize/8)
	hdr[0] = blockMagic | uint64(cstage.Protocol)<<32
	hdr[2] = flags
	hdr[3], hdr[4], hdr[5] = s.Root.Mount, s.Root.Dev, s.Root.Ino
	hdr[6] = b.str(s.Dir)
	hdr[7] = b.str(s.Path)
	hdr[8], hdr[9] = uint64(len(cand)), b.strs(cand)
	hdr[10], hdr[11] = uint64(1+len(s.Args)), b.strs(append([]string{s.Path}, s.Args...))
	hdr[12], hdr[13] = uint64(len(s.Env)), b.strs(s.Env)
	var rl []uint64
	for _, r := range call.rlimits {
		var f uint64
		if r.nofileCap {
			f = rlimitNofileCap
		}
		rl = append(rl, uint64(r.resource), f, r.cur, r.max)
	}
	hdr[14], hdr[15] = uint64(len(call.rlimits)), b.words(rl)
	if s.LandlockABI >= 1 {
		hdr[2] |= blockLandlock
		a := landlockAccessFor(s.LandlockABI)
		hdr[16], hdr[17], hdr[19] = uint64(a.rulesetSize), a.handledFS, a.scoped
		if s.Landlock.NoTCP && s.LandlockABI >= 4 {
			hdr[18] = unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
		}
		hdr[20] = landlockFileAccess
		var rules []uint64
		for _, g := range []struct {
			paths    []string
			access   uint64
			readOnly uint64
		}{
			{s.Landlock.ReadOnly, a.readOnly, 1},
			{s.Landlock.Writable, a.writable, 0},
			{s.Landlock.Devices, a.devices, 0},
		} {
			for _, p := range g.paths {
				rules = append(rules, g.access, b.str(p), g.readOnly)
				call.rules = append(call.rules, p)
			}
		}
		hdr[21], hdr[22] = uint64(len(call.rules)), b.words(rules)
	}
	hdr[23] = unix.SECCOMP_FILTER_FLAG_TSYNC
	hdr[24] = uint64(len(filter) / 8)
	hdr[25] = b.bytes(filter)
	b.buf = append(b.buf, 0) // the last byte is NUL: every string ends inside
	hdr[1] = uint64(len(b.buf))
	for i, w := range hdr {
		binary.NativeEndian.PutUint64(b.buf[8*i:], w)
	}
	if b.err != nil {
		return nil, nil, b.err
	}
	return b.buf, call, nil
}

// blockWriter appends the block's data, each piece 8-aligned, and returns
// its offset.
type blockWriter struct {
	buf []byte
	err error
}

func (b *blockWriter) align() {
	for len(b.buf)%8 != 0 {
		b.buf = append(b.buf, 0)
	}
}

func (b *blockWriter) bytes(p []byte) uint64 {
	b.align()
	off := uint64(len(b.buf))
	b.buf = append(b.buf, p...)
	return off
}

func (b *blockWriter) str(s string) uint64 {
	if strings.IndexByte(s, 0) >= 0 && b.err == nil {
		b.err = bug(fmt.Errorf("exec stage instructions: %q holds a NUL byte", s))
	}
	off := uint64(len(b.buf))
	b.buf = append(append(b.buf, s...), 0)
	return off
}

// strs writes the strings, then an array of their offsets with one more
// slot, which the stage sets to NULL.
func (b *blockWriter) strs(ss []string) uint64 {
	offs := make([]uint64, 0, len(ss)+1)
	for _, s := range ss {
		offs = append(offs, b.str(s))
	}
	return b.words(append(offs, 0))
}

func (b *blockWriter) words(ws []uint64) uint64 {
	b.align()
	off := uint64(len(b.buf))
	for _, w := range ws {
		b.buf = binary.NativeEndian.AppendUint64(b.buf, w)
	}
	return off
}

// The stage's reports: stage.c's struct report.
const (
	reportSize = 64

	kindReady = 1
	kindSetup = 2
	kindStart = 3
	kindPart  = 4

	startLookup = 1
)

// The operation of a setup report (stage.c's OP_*).
const (
	opBlock = 1 + iota
	opStatxRoot
	opRootNoMnt
	opRootMismatch
	opRlimit
	opRlimits
	opChdir
	opAmbientClear
	opCapget
	opCapsLeft
	opSecurebits
	opCapbsetDrop
	opCapset
	opNoNewPrivs
	opLandlockCreate
	opLandlockNotAbs
	opLandlockOpen
	opLandlockFstat
	opLandlockAdd
	opLandlockRestrict
	opSeccomp
	opCloseRange
)

// Why the stage refused its block (opBlock's index).
var blockRefusals = map[uint32]string{
	1: "truncated",
	2: "bad magic number",
	3: "another protocol version",
	4: "size out of range",
	5: "read failed",
	6: "longer than its header says",
	7: "not NUL-terminated",
	8: "an offset or count out of range",
	9: "no memory for it",
}

// cReport is one record of the stage's.
type cReport struct {
	magic, kind, op, index uint32
	errno                  syscall.Errno
	v                      [5]uint64
}

func decodeCReport(b []byte) cReport {
	ne := binary.NativeEndian
	r := cReport{magic: ne.Uint32(b), kind: ne.Uint32(b[4:]), op: ne.Uint32(b[8:]), index: ne.Uint32(b[12:]),
		errno: syscall.Errno(int32(ne.Uint32(b[16:])))}
	for i := range r.v {
		r.v[i] = ne.Uint64(b[24+8*i:])
	}
	return r
}

// stageFilters holds, per filterOptions, the seccomp program as the stage
// takes it: its struct sock_filter records, in this machine's byte order.
// A sandbox's calls all have the same options, and assembling the program
// was a tenth of a millisecond of every call's CPU.
var stageFilters sync.Map // filterOptions → []byte, never changed once stored

// stageFilter returns the seccomp program for o as the stage takes it.
func stageFilter(o filterOptions) ([]byte, error) {
	if b, ok := stageFilters.Load(o); ok {
		return b.([]byte), nil
	}
	prog, err := seccompProgram(o)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, 8*len(prog))
	for _, in := range prog {
		b = binary.NativeEndian.AppendUint16(b, in.Code)
		b = append(b, in.Jt, in.Jf)
		b = binary.NativeEndian.AppendUint32(b, in.K)
	}
	stageFilters.Store(o, b)
	return b, nil
}

func (c *cStageCall) rlimitError(cr cReport) error {
	if int(cr.index) >= len(c.rlimits) {
		return bug(fmt.Errorf("exec stage: report on rlimit %d of %d", cr.index, len(c.rlimits)))
	}
	return fmt.Errorf("setrlimit(%s, %d): %w", c.rlimits[cr.index].name, cr.v[0], cr.errno)
}

func (c *cStageCall) rule(i uint32) string {
	if int(i) < len(c.rules) {
		return c.rules[i]
	}
	return fmt.Sprintf("(rule %d)", i)
}

// setupError is the error the Go stage fails with where the C stage
// reported cr (parts: the rlimits that failed before it).
func (c *cStageCall) setupError(cr cReport, parts []error) error {
	e := cr.errno
	switch cr.op {
	case opBlock:
		why := blockRefusals[cr.index]
		if e != 0 {
			return &SetupError{Op: "exec stage instructions", Err: why + ": " + e.Error(), Errno: e}
		}
		return bug(&SetupError{Op: "exec stage instructions", Err: why})
	case opStatxRoot:
		return fmt.Errorf("statx /: %w", e)
	case opRootNoMnt:
		return errors.New("statx /: no mount id (Linux 5.8+)")
	case opRootMismatch:
		root := &rootID{Mount: cr.v[0], Dev: cr.v[1], Ino: cr.v[2]}
		return &SetupError{Op: "exec stage root", Err: fmt.Sprintf("this process's root %+v is not the sandbox's %+v", root, c.s.Root)}
	case opRlimits:
		return errors.Join(parts...)
	case opChdir:
		return fmt.Errorf("chdir %q: %w", c.s.Dir, e)
	case opAmbientClear:
		return fmt.Errorf("prctl(PR_CAP_AMBIENT_CLEAR_ALL): %w", e)
	case opCapget:
		return fmt.Errorf("capget: %w", e)
	case opCapsLeft:
		data := [2]unix.CapUserData{
			{Effective: uint32(cr.v[1]), Permitted: uint32(cr.v[1] >> 32), Inheritable: uint32(cr.v[2])},
			{Effective: uint32(cr.v[2] >> 32), Permitted: uint32(cr.v[3]), Inheritable: uint32(cr.v[3] >> 32)},
		}
		return bug(fmt.Errorf("capabilities left after exec as uid %d: %+v", cr.v[0], data))
	case opSecurebits:
		return fmt.Errorf("prctl(PR_SET_SECUREBITS): %w", e)
	case opCapbsetDrop:
		return fmt.Errorf("prctl(PR_CAPBSET_DROP, %d): %w", cr.index, e)
	case opCapset:
		return fmt.Errorf("capset: %w", e)
	case opNoNewPrivs:
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", e)
	case opLandlockCreate:
		return fmt.Errorf("landlock_create_ruleset: %w", e)
	case opLandlockNotAbs:
		return fmt.Errorf("landlock_add_rule %q: not an absolute path", c.rule(cr.index))
	case opLandlockOpen:
		return fmt.Errorf("landlock_add_rule %q: open: %w", c.rule(cr.index), e)
	case opLandlockFstat:
		return fmt.Errorf("landlock_add_rule %q: fstat: %w", c.rule(cr.index), e)
	case opLandlockAdd:
		return fmt.Errorf("landlock_add_rule %q: %w", c.rule(cr.index), e)
	case opLandlockRestrict:
		if e == unix.EPERM {
			return fmt.Errorf("landlock_restrict_self: %w (no_new_privs is not set and the thread lacks CAP_SYS_ADMIN)", e)
		}
		return fmt.Errorf("landlock_restrict_self: %w", e)
	case opSeccomp:
		if e == 0 {
			return fmt.Errorf("seccomp(SECCOMP_SET_MODE_FILTER): thread %d cannot take the filter (SECCOMP_FILTER_FLAG_TSYNC)", cr.v[0])
		}
		return fmt.Errorf("seccomp(SECCOMP_SET_MODE_FILTER): %w", e)
	case opCloseRange:
		return fmt.Errorf("close_range: %w", e)
	}
	return bug(fmt.Errorf("exec stage: unknown report %d (errno %d)", cr.op, cr.errno))
}

// startError is the StartError the Go stage reports where the C stage
// reported cr: its lookup (lookPath) or its execve failed.
func (c *cStageCall) startError(cr cReport) *StartError {
	if cr.index == startLookup && cr.errno == 0 && !c.slash {
		return notInPath(c.s.Path)
	}
	return startError(c.s.Path, cr.errno)
}

// nestedUserNS is the exec stage's nested user namespace, which maps the
// caller back: the command runs as them, with no capabilities in the
// namespace that owns the mounts, so the mount tree is locked.
func nestedUserNS(uid, gid int) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		Cloneflags:                 syscall.CLONE_NEWUSER,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: uid, HostID: 0, Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: gid, HostID: 0, Size: 1}},
		GidMappingsEnableSetgroups: false,
	}
}

// helperIDs returns the caller's uid and gid, the helper's arguments.
func helperIDs() (uid, gid int, err error) {
	if len(os.Args) != 3 {
		return 0, 0, bug(fmt.Errorf("helper arguments %q, want uid and gid", os.Args[1:]))
	}
	uid, err1 := strconv.Atoi(os.Args[1])
	gid, err2 := strconv.Atoi(os.Args[2])
	if err := errors.Join(err1, err2); err != nil {
		return 0, 0, bug(fmt.Errorf("helper arguments: %w", err))
	}
	return uid, gid, nil
}
