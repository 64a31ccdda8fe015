package sandbox

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
	"github.com/nanosandbox/nanosandbox-mcp/internal/sandbox/cstage"
)

// The helper in C (cstage/src/helper.c), used wherever the release tooling
// built it with the C exec stage (cstage/build.sh); a plain go build has
// neither, and runs this binary as its helper (helper_linux.go). See
// cstage/HELPER-PLAN.md for the design. The server starts it where it
// starts this binary as the helper, but in none of the sandbox's
// namespaces: it launches itself into them (takeLaunch). It hands it
// blocks instead of the JSON spec: as it starts, the namespaces and maps,
// then the scratch root's ops (the exec stage starts after them, and
// waits); with the call, every mount operation of buildRoot as a
// system call with its arguments, the loopback, the proxy's socket,
// pid_max, and the exec stage's own block, which the helper passes on
// once it has built the root. Its reports, and the stage's, are 64-byte
// records on the report pipe, which cHelperCall turns into the Go
// helper's reports.

// useCHelper reports whether the helpers are to be the one in C: where
// both blobs were built, as a release's are. The two come from one build
// step; where either does not match its source (one changed since it ran),
// the helper and its exec stage are the ones in Go.
func useCHelper() bool {
	return cHelperFile() != nil && cStageFile() != nil
}

// cHelperStageFD is the helper's descriptor of the exec stage's memfd:
// after stdio, the spec, the reports, the proxy's socket and a root
// caller's idmapped trees (startHelper).
func (s *linuxSandbox) cHelperStageFD() int {
	n := idmapFD
	if s.root != nil {
		n += len(s.root.paths)
	}
	return n
}

// cHelperStartBlock is the block a helper in C of this sandbox is given as
// it starts (startHelper), launching itself as l says.
func (s *linuxSandbox) cHelperStartBlock(l *launch) ([]byte, error) {
	return encodeHelperStart(s.uid, s.gid, cHelperStartOps(s.idmapped()), s.cHelperStageFD(), l)
}

// cHelperBlock is the block of the helper in C for the call sp, after its
// start block.
func (s *linuxSandbox) cHelperBlock(sp *spec) ([]byte, *cHelperCall, error) {
	ops, err := cHelperCallOps(sp)
	if err != nil {
		return nil, nil, err
	}
	net := netFD
	if sp.HostNetwork {
		net = -1
	}
	return encodeHelperBlock(sp, cHelperStartOps(s.idmapped()), ops, s.cHelperStageFD(), net)
}

// idmapped lists the paths of a root caller's idmapped trees, or none.
func (s *linuxSandbox) idmapped() []string {
	if s.root == nil {
		return nil
	}
	return s.root.paths
}

// readCReports reads the records of a helper in C, and of its exec stage,
// from r until it ends, and returns them as the Go helper's reports, in
// order, but for Took, for which took is called instead.
func readCReports(r io.Reader, call *cHelperCall, took func()) []report {
	var rs []report
	buf := make([]byte, reportSize)
	for {
		if _, err := io.ReadFull(r, buf); err != nil {
			return rs
		}
		rep, ok := call.report(decodeCReport(buf))
		switch {
		case !ok:
		case rep.Took:
			took()
		default:
			rs = append(rs, rep)
		}
	}
}

// cHelperFile returns the sealed memfd holding the helper in C for this
// architecture, made at the first call, or nil when there is none.
var cHelperFile = sync.OnceValue(func() *os.File {
	blob := cstage.HelperBlob(runtime.GOARCH)
	if blob == nil {
		return nil
	}
	f, err := cstage.SealedMemfd("nanosandbox-mcp: sandbox", blob)
	if err != nil {
		return nil
	}
	return f
})

// The helper's block: helper.c's struct header and struct op.
const (
	helperMagic      = 0x4842534e // "NSBH"
	helperHeaderSize = 160
	helperOpSize     = 64
)

// An op's code (helper.c's OP_*).
const (
	hopMount = 1 + iota
	hopMkdir
	hopCreate
	hopSymlink
	hopPivot
	hopChdir
	hopUmount
	hopBind
	hopTmpfs
	hopSeal
	hopWrite
	hopLoopback
	hopListen
	hopAttachFD
	hopBindLink
)

// An op's flags.
const (
	hopRecursive = 1 // hopBind: the whole tree
	hopMissingOK = 2 // a path that is gone skips the op
	hopAnyErrOK  = 4 // any failure skips the op
	hopMake      = 8 // hopBind, hopTmpfs: a missing mount point is made below e
	hopDir       = 16
)

// hop is one op of the helper's block.
type hop struct {
	code, flags, slot uint64
	a, b, c           string // string arguments, as the code says
	d                 uint64
	e                 string // hopMount's data; the root below which hopMake makes a mount point
	en                uint64 // hopListen's backlog, when e is empty
	// desc names the op as the Go helper's message would ("mount tmpfs
	// /tmp"); "" where the step alone names it (the loopback, the proxy).
	// descOnto, if set, names its move onto the target instead (bindTree's
	// "bind X on Y").
	desc, descOnto string
}

// cHelperStartOps lists what the helper in C does before a call comes, as
// the Go helper's enterScratch and attachIdmapped do: the scratch root,
// then a root caller's idmapped trees (idmapped, as rootCaller.paths: one
// descriptor each from idmapFD on). After them it starts the exec stage,
// which waits for its block.
func cHelperStartOps(idmapped []string) []hop {
	const procFlags = unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC
	ops := []hop{
		{code: hopMount, a: "", b: "/", c: "", d: unix.MS_REC | unix.MS_PRIVATE, desc: "mount --make-rprivate /"},
		{code: hopMount, a: "tmpfs", b: scratch, c: "tmpfs", d: unix.MS_NOSUID | unix.MS_NODEV, e: "mode=0755,size=64k", desc: "mount tmpfs " + scratch},
	}
	for _, d := range []string{newRoot, oldRoot, "/proc"} {
		ops = append(ops, hop{code: hopMkdir, a: scratch + d, d: 0o755, desc: "mkdir " + d})
	}
	ops = append(ops,
		hop{code: hopCreate, a: scratch + emptyFile, d: 0o444, desc: "create " + emptyFile},
		hop{code: hopPivot, a: scratch, b: scratch + oldRoot, desc: "pivot_root " + scratch},
		hop{code: hopChdir, a: "/", desc: "chdir /"},
		// This pid namespace's /proc, where the stage's maps are written.
		hop{code: hopMount, a: "proc", b: "/proc", c: "proc", d: procFlags, desc: "mount proc on the scratch root"},
	)
	for i, p := range idmapped {
		ops = append(ops, hop{code: hopAttachFD, d: uint64(idmapFD + i), b: oldRoot + p, desc: "idmapped mount " + p})
	}
	return ops
}

// cHelperCallOps lists what the helper in C does for the call s once it
// has it, in the Go helper's order: buildRoot, the network, pid_max,
// readOnlyProc. What it needs to know of the host, it asks now (the
// server sees the same /dev and /proc).
func cHelperCallOps(s *spec) ([]hop, error) {
	var ops []hop
	add := func(o hop) { ops = append(ops, o) }
	mount := func(src, target, fstype string, flags uint64, data, desc string) {
		add(hop{code: hopMount, a: src, b: target, c: fstype, d: flags, e: data, desc: desc})
	}
	bind := func(src, target string, attr uint64, flags uint64, desc string) {
		add(hop{code: hopBind, a: src, b: target, d: attr, flags: flags, desc: desc})
	}
	nextSlot := uint64(1)
	tmpfs := func(mode, size, target string, keep bool, desc string) uint64 {
		var slot uint64
		if keep {
			slot = nextSlot
			nextSlot++
		}
		add(hop{code: hopTmpfs, a: mode, b: size, c: target, d: unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV, slot: slot, desc: desc})
		return slot
	}
	const (
		nosuidNodev = unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV
		procFlags   = unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC
	)

	// buildRoot: the host tree, read-only, nosuid and nodev all the way
	// down; proc; the minimal /dev.
	bind(oldRoot, newRoot, unix.MOUNT_ATTR_RDONLY|nosuidNodev, hopRecursive, "bind "+oldRoot)
	ops[len(ops)-1].descOnto = "bind " + oldRoot + " on " + newRoot
	add(hop{code: hopUmount, a: newRoot + "/proc", d: unix.MNT_DETACH, flags: hopAnyErrOK, desc: "umount /proc"}) // the host's, copied with the tree
	mount("proc", newRoot+"/proc", "proc", procFlags, "", "mount proc")
	dev := newRoot + "/dev"
	add(hop{code: hopUmount, a: dev, d: unix.MNT_DETACH, flags: hopAnyErrOK, desc: "umount /dev"})
	devSlot := tmpfs("755", strconv.Itoa(1<<20), dev, true, "mount tmpfs /dev")
	for _, d := range devices {
		if _, err := os.Stat("/dev/" + d); err != nil {
			continue
		}
		add(hop{code: hopCreate, a: dev + "/" + d, d: 0o644, desc: "create /dev/" + d})
		bind(oldRoot+"/dev/"+d, dev+"/"+d, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC, 0, "bind /dev/"+d)
	}
	for _, d := range []string{"pts", "shm"} {
		add(hop{code: hopMkdir, a: dev + "/" + d, d: 0o755, desc: "mkdir /dev/" + d})
	}
	mount("devpts", dev+"/pts", "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=620", "mount devpts")
	tmpfs("1777", sizeArg(s.Limits.TmpBytes), dev+"/shm", false, "mount tmpfs /dev/shm")
	for _, l := range [][2]string{{"ptmx", "pts/ptmx"}, {"fd", "/proc/self/fd"}, {"stdin", "/proc/self/fd/0"}, {"stdout", "/proc/self/fd/1"}, {"stderr", "/proc/self/fd/2"}} {
		add(hop{code: hopSymlink, a: l[1], b: dev + "/" + l[0], desc: "symlink /dev/" + l[0]})
	}
	add(hop{code: hopSeal, slot: devSlot, d: unix.MOUNT_ATTR_RDONLY, desc: "mount_setattr /dev read-only"})

	// The plan's ops (runOp).
	var seal []uint64
	for _, op := range s.Ops {
		target := newRoot + op.Path
		mark := len(ops) // the op added for it, which may make its mount point
		makeIn := func(dir bool) {
			if op.Make && len(ops) > mark {
				ops[mark].flags |= hopMake
				if dir {
					ops[mark].flags |= hopDir
				}
				ops[mark].e = newRoot
			}
		}
		switch op.Kind {
		case opTmpfs, opHide:
			mode, size := tmpfsModeSize(op)
			if slot := tmpfs(strconv.FormatUint(uint64(mode), 8), sizeArg(size), target, op.Kind == opHide, "mount tmpfs "+op.Path); slot != 0 {
				seal = append(seal, slot)
			}
			makeIn(true)
		case opMask:
			// Gone since the plan was made: nothing to hide (runOp).
			bind(emptyFile, target, unix.MOUNT_ATTR_RDONLY|nosuidNodev|unix.MOUNT_ATTR_NOEXEC, hopMissingOK, "mask "+op.Path)
		case opProtect, opPin:
			var attr uint64 = nosuidNodev
			if op.Kind == opProtect {
				attr |= unix.MOUNT_ATTR_RDONLY
			}
			// Gone since it was planned: nothing to keep (runOp).
			if op.Link {
				add(hop{code: hopBindLink, b: target, d: attr, flags: hopMissingOK, desc: op.Kind.String() + " " + op.Path})
			} else {
				bind(target, target, attr, hopRecursive|hopMissingOK, op.Kind.String()+" "+op.Path)
				makeIn(true) // a pin the plan makes where it is missing
			}
		case opBindRO, opBindRW:
			var attr uint64 = nosuidNodev
			if op.Kind == opBindRO {
				attr |= unix.MOUNT_ATTR_RDONLY
			}
			bind(oldRoot+op.Src, target, attr, hopRecursive, op.Kind.String()+" "+op.Path)
			makeIn(op.Dir)
		default:
			return nil, bug(fmt.Errorf("mount step %d", op.Kind))
		}
	}
	for _, slot := range seal {
		add(hop{code: hopSeal, slot: slot, d: unix.MOUNT_ATTR_RDONLY, desc: "mount_setattr read-only"})
	}
	// The final pivot.
	add(hop{code: hopChdir, a: newRoot, desc: "chdir " + newRoot})
	add(hop{code: hopPivot, a: ".", b: ".", desc: "pivot_root ."})
	add(hop{code: hopUmount, a: ".", d: unix.MNT_DETACH, desc: "umount old root"})
	add(hop{code: hopChdir, a: "/", desc: "chdir /"})

	// buildSandbox: the network, pid_max, then /proc/sys read-only.
	if !s.HostNetwork {
		add(hop{code: hopLoopback})
		add(hop{code: hopListen, d: proxyPort, en: proxyBacklog})
	}
	if s.Mech.Processes == ByPidNamespace {
		pidMax := strconv.Itoa(s.Limits.MaxProcesses + reservedPids)
		add(hop{code: hopWrite, a: "/proc/sys/kernel/pid_max", b: pidMax, desc: "write /proc/sys/kernel/pid_max " + pidMax})
	}
	for _, p := range []string{"/proc/sys", "/proc/sysrq-trigger"} {
		if _, err := os.Lstat(p); err != nil && p != "/proc/sys" {
			continue // a kernel without CONFIG_MAGIC_SYSRQ
		}
		bind(p, p, unix.MOUNT_ATTR_RDONLY|nosuidNodev|unix.MOUNT_ATTR_NOEXEC, hopRecursive, "bind "+p+" read-only")
	}
	return ops, nil
}

// sizeArg is a tmpfs size as fsconfig takes it: "" for the kernel's default.
func sizeArg(n int64) string {
	if n <= 0 {
		return ""
	}
	return strconv.FormatInt(n, 10)
}

// cHelperTmpDirs are the tmpfs the helper checks for a full one when the
// command ends (limitReached), in its order.
func cHelperTmpDirs(m Mechanisms) []string {
	if m.Tmp == NoLimit {
		return nil
	}
	return append(append([]string(nil), policy.PrivateDirs...), "/dev/shm")
}

// cHelperCall is what the server needs to turn the reports of one call's
// helper in C, and of its exec stage, into the Go helper's.
type cHelperCall struct {
	s     *spec
	ops   []hop
	tmp   []string
	stage *cStageCall
	// stageParts collects the stage's partial failures (its rlimits)
	// until its setup report.
	stageParts []error
}

// helperStart is the flag of a start block (helper.c's HF_START);
// helperHold, with it, that of a held user namespace (HF_HOLD).
const (
	helperStart = 1
	helperHold  = 2
)

// encodeHelperStart is the block a helper in C is given as it starts,
// before its call: start (cHelperStartOps), then the exec stage started
// from stageFD as uid and gid. With l, the helper was started in none of
// the sandbox's namespaces and launches itself into them (helper.c's
// launch).
func encodeHelperStart(uid, gid int, start []hop, stageFD int, l *launch) ([]byte, error) {
	return encodeHelper(start, func(b *blockWriter, hdr []uint64) {
		hdr[2] = helperStart
		hdr[3], hdr[4] = uint64(uid), uint64(gid)
		hdr[12] = uint64(stageFD)
		hdr[13] = ^uint64(0)
		if l != nil {
			hdr[16] = uint64(l.flags)
			hdr[17], hdr[18] = b.str(l.uidMap), b.str(l.gidMap)
			if l.setgroups {
				hdr[19] |= launchSetgroups
			}
			if l.becomeRoot {
				hdr[19] |= launchBecomeRoot
			}
		}
	})
}

// launch is what the helper in C does in place of the server's fork
// code, which would otherwise have made its namespaces: the clone flags,
// the uid_map and gid_map written for it (the text of the files), whether
// setgroups stays allowed, and whether it then becomes its namespace's 0
// with no groups (a root caller's, as syscall.Credential{} would).
type launch struct {
	flags          uintptr
	uidMap, gidMap string
	setgroups      bool
	becomeRoot     bool
}

// helper.c's L_* flags.
const (
	launchSetgroups  = 1
	launchBecomeRoot = 2
)

// takeLaunch moves what a's namespaces, maps and credential say into a
// launch, and clears them from a: the helper in C is started in none of
// them (a vfork, where a new user namespace forces a full fork of the
// server), and makes them itself.
func takeLaunch(a *syscall.SysProcAttr) (*launch, error) {
	l := &launch{flags: a.Cloneflags, setgroups: a.GidMappingsEnableSetgroups}
	idMap := func(ms []syscall.SysProcIDMap) string {
		var b strings.Builder
		for _, m := range ms {
			fmt.Fprintf(&b, "%d %d %d\n", m.ContainerID, m.HostID, m.Size)
		}
		return b.String()
	}
	l.uidMap, l.gidMap = idMap(a.UidMappings), idMap(a.GidMappings)
	if c := a.Credential; c != nil {
		if c.Uid != 0 || c.Gid != 0 || len(c.Groups) != 0 || c.NoSetGroups {
			return nil, bug(fmt.Errorf("the helper in C becomes 0 with no groups only, not %+v", *c))
		}
		l.becomeRoot = true
	}
	if l.flags&syscall.CLONE_NEWUSER == 0 || l.uidMap == "" || l.gidMap == "" {
		return nil, bug(fmt.Errorf("the helper in C launches into a new user namespace with maps, not %#x %q %q", l.flags, l.uidMap, l.gidMap))
	}
	a.Cloneflags, a.UidMappings, a.GidMappings, a.GidMappingsEnableSetgroups, a.Credential = 0, nil, nil, false, nil
	return l, nil
}

// encodeHelperBlock lays the call s out as the helper's block: ops its
// steps (cHelperCallOps), after the start block's (start; nil when the
// call's block is the only one, and ops all of them). stageFD and netFD
// are the helper's descriptors of the exec stage's memfd and of the
// proxy's socket (-1: none).
func encodeHelperBlock(s *spec, start, ops []hop, stageFD, netFD int) ([]byte, *cHelperCall, error) {
	// The stage's block, with a root the helper fills in once it has
	// built it (a stage started earlier had its root moved along; it
	// checks it).
	st := *s
	st.Root = &rootID{}
	stageBlock, stageCall, err := encodeBlock(&st)
	if err != nil {
		return nil, nil, err
	}
	call := &cHelperCall{s: s, ops: append(append([]hop(nil), start...), ops...), tmp: cHelperTmpDirs(s.Mech), stage: stageCall}
	raw, err := encodeHelper(ops, func(b *blockWriter, hdr []uint64) {
		hdr[3], hdr[4] = uint64(s.UID), uint64(s.GID)
		if s.Timeout > 0 {
			hdr[5] = uint64(s.Timeout)
		}
		hdr[8], hdr[9] = uint64(len(stageBlock)), b.bytes(stageBlock)
		hdr[10], hdr[11] = uint64(len(call.tmp)), b.strs(call.tmp)
		hdr[12] = uint64(stageFD)
		hdr[13] = ^uint64(0)
		if netFD >= 0 {
			hdr[13] = uint64(netFD)
		}
		if s.Mech.countsTasks() {
			hdr[14] = uint64(s.Limits.MaxProcesses)
		}
		hdr[15] = uint64(len(start))
	})
	if err != nil {
		return nil, nil, err
	}
	return raw, call, nil
}

// encodeHelper writes a block of the helper's: its ops, then what fill
// adds and sets in its header.
func encodeHelper(ops []hop, fill func(b *blockWriter, hdr []uint64)) ([]byte, error) {
	var b blockWriter
	b.buf = make([]byte, helperHeaderSize, 4096)
	hdr := make([]uint64, helperHeaderSize/8)
	hdr[0] = helperMagic | uint64(cstage.HelperProtocol)<<32
	var words []uint64
	for _, o := range ops {
		e := o.en
		if o.code == hopMount || o.e != "" {
			e = b.str(o.e)
		}
		words = append(words, o.code, o.flags, o.slot, b.str(o.a), b.str(o.b), b.str(o.c), o.d, e)
	}
	hdr[6], hdr[7] = uint64(len(ops)), b.words(words)
	fill(&b, hdr)
	b.buf = append(b.buf, 0) // the last byte is NUL: every string ends inside
	hdr[1] = uint64(len(b.buf))
	for i, w := range hdr {
		binary.NativeEndian.PutUint64(b.buf[8*i:], w)
	}
	if b.err != nil {
		return nil, b.err
	}
	return b.buf, nil
}

// The helper's reports (helper.c's K_*, S_*, H_*).
const (
	hkindSetup = 2
	hkindTook  = 5
	hkindExit  = 6
	hkindMoved = 7
	hkindHeld  = 8

	exitTimedOut = 1
)

// hsteps names the step of an op that failed, as the Go helper's message
// does (helper.c's S_*, from 1).
var hsteps = []string{"", "", "open", "open_tree", "mount_setattr", "open", "move_mount",
	"fsopen", "fsconfig mode", "fsconfig size", "fsconfig create", "fsmount",
	"socket", "bind " + strings.TrimPrefix(proxyURL, "http://"), "listen", "sendmsg(SCM_RIGHTS)",
	"ioctl(SIOCGIFFLAGS lo)", "ioctl(SIOCSIFFLAGS lo)", "fstat", "no kept mount",
	"mount point %s", "mount point %s: move aside what is in the way", "mkdir %s", "create %s", "open %s"}

const (
	hstepOpenSrc    = 2
	hstepOpenTarget = 5
	hstepMoveMount  = 6
	hstepMakeOpen   = 20 // the first of the steps of making a mount point
	hstepMakeReopen = 24
)

// hfailures names the helper's failures outside its ops (helper.c's H_*,
// from 100).
var hfailures = []string{"helper instructions", "prctl(PR_SET_DUMPABLE)", "rt_sigprocmask", "close_range",
	"pipe", "start exec stage", "write the exec stage's setgroups", "write the exec stage's uid_map",
	"write the exec stage's gid_map", "start exec stage", "statx /", "hand the exec stage its spec",
	"wait4", "start exec stage", "clock_gettime", "open /proc", "exec stage",
	"start the sandbox helper", "write the sandbox helper's setgroups",
	"write the sandbox helper's uid_map", "write the sandbox helper's gid_map"}

// hLaunch is helper.c's H_LAUNCH, and its steps (LS_*) as the Go fork
// code's failures would read.
const hLaunch = 117

var hLaunchSteps = []string{"pipe", "clone", "prctl(PR_SET_PDEATHSIG)", "sync", "setgroups", "setresgid", "setresuid", "setsid"}

const hLaunchClone = 1

// hStageEnded is helper.c's H_STAGE_ENDED: the stage started before the
// call had ended when the call came.
const hStageEnded = 116

// report turns one record of the helper's, or of its exec stage, into the
// Go helper's report; ok is false for a record that makes none (a partial
// failure of the stage, kept for its setup report).
func (c *cHelperCall) report(cr cReport) (r report, ok bool) {
	if cr.magic == blockMagic { // the exec stage's
		switch cr.kind {
		case kindReady:
			return report{Ready: true}, true
		case kindPart:
			c.stageParts = append(c.stageParts, c.stage.rlimitError(cr))
			return report{}, false
		case kindSetup:
			return report{Setup: asSetupError(c.stage.setupError(cr, c.stageParts))}, true
		case kindStart:
			return report{Start: c.stage.startError(cr)}, true
		}
	}
	if cr.magic != helperMagic {
		return report{Setup: &SetupError{Op: "sandbox helper", Err: "unreadable report"}}, true
	}
	switch cr.kind {
	case hkindTook:
		return report{Took: true}, true
	case hkindSetup:
		return report{Setup: c.setupError(cr)}, true
	case hkindExit:
		return report{Exit: c.exit(cr)}, true
	case hkindMoved:
		if m := c.moved(cr); m != nil {
			return report{Moved: m}, true
		}
		return report{Setup: asSetupError(bug(fmt.Errorf("helper: moved aside at op %d (%d) of %d", cr.index, cr.op, len(c.ops))))}, true
	}
	return report{Setup: &SetupError{Op: "sandbox helper", Err: fmt.Sprintf("unknown report %d", cr.kind)}}, true
}

// setupError is the Go helper's SetupError for the failure cr reports.
func (c *cHelperCall) setupError(cr cReport) *SetupError {
	e := cr.errno
	if cr.op >= 100 {
		i := int(cr.op - 100)
		if i >= len(hfailures) {
			return asSetupError(bug(fmt.Errorf("helper: unknown failure %d (errno %d)", cr.op, e)))
		}
		if i == 0 { // the block
			why := blockRefusals[cr.index]
			if cr.index == 10 {
				why = "an unknown op"
			}
			if e != 0 {
				return &SetupError{Op: hfailures[0], Err: why + ": " + e.Error(), Errno: e}
			}
			return asSetupError(bug(&SetupError{Op: hfailures[0], Err: why}))
		}
		if cr.op == hStageEnded {
			return &SetupError{Op: "exec stage", Err: "it ended before its call"} // as takeCall says
		}
		if cr.op == hLaunch {
			return launchError(cr.index, e)
		}
		if e == 0 {
			return &SetupError{Op: hfailures[i], Err: "failed"}
		}
		return setupError(hfailures[i], e)
	}
	if int(cr.index) >= len(c.ops) || c.ops[cr.index].code != uint64(cr.op) {
		return asSetupError(bug(fmt.Errorf("helper: report on op %d (%d) of %d", cr.index, cr.op, len(c.ops))))
	}
	o := c.ops[cr.index]
	step := ""
	if cr.v[0] < uint64(len(hsteps)) {
		step = hsteps[cr.v[0]]
	}
	if o.desc == "" {
		return &SetupError{Op: step, Err: errnoError(e).Error(), Errno: e}
	}
	var err error = e
	switch {
	case cr.v[0] == hstepOpenSrc || cr.v[0] == hstepOpenTarget:
		path := o.a
		if cr.v[0] == hstepOpenTarget {
			path = o.b
			if o.code == hopTmpfs {
				path = o.c
			}
		}
		path = strings.TrimPrefix(strings.TrimPrefix(path, newRoot), oldRoot)
		err = fmt.Errorf("open %s: %w", path, e)
		if e == unix.ELOOP {
			err = fmt.Errorf("%s: a symbolic link is in the way", path)
		}
	case cr.v[0] >= hstepMakeOpen && cr.v[0] <= hstepMakeReopen:
		target := o.b
		if o.code == hopTmpfs {
			target = o.c
		}
		parts := strings.Split(strings.TrimPrefix(target, o.e+"/"), "/")
		at := o.e
		if k := int(cr.v[1]); k > 0 && k <= len(parts) {
			at = "/" + strings.Join(parts[:k], "/")
		}
		err = fmt.Errorf("%s: %w", fmt.Sprintf(step, at), e)
	case step != "" && e != 0:
		err = fmt.Errorf("%s: %w", step, e)
	case e == 0:
		err = errors.New(step)
	}
	if o.descOnto != "" && (cr.v[0] == hstepOpenTarget || cr.v[0] == hstepMoveMount) {
		return setupError(o.descOnto, err)
	}
	return setupError(o.desc, err)
}

// moved is the Go helper's report of what make_point moved aside, as cr
// says (helper.c's K_MOVED), or nil for a record on no such op.
func (c *cHelperCall) moved(cr cReport) *movedAside {
	if int(cr.index) >= len(c.ops) || c.ops[cr.index].code != uint64(cr.op) {
		return nil
	}
	o := c.ops[cr.index]
	target := o.b
	if o.code == hopTmpfs {
		target = o.c
	}
	parts := strings.Split(strings.TrimPrefix(target, o.e+"/"), "/")
	k := int(cr.v[0])
	if k < 1 || k > len(parts) {
		return nil
	}
	return &movedAside{Path: "/" + strings.Join(parts[:k], "/"), N: int(cr.v[1]), Mode: uint32(cr.v[2]), Dir: cr.v[3] != 0}
}

// launchError is the error the server's fork of a helper gave (startHelper)
// for the launch's failure at step (hLaunchSteps) with e.
func launchError(step uint32, e unix.Errno) *SetupError {
	if step != hLaunchClone {
		name := "step " + strconv.Itoa(int(step))
		if int(step) < len(hLaunchSteps) {
			name = hLaunchSteps[step]
		}
		return setupError("start the sandbox helper", fmt.Errorf("%s: %w", name, e))
	}
	return helperStartFailed(e, false)
}

// exit is the Go helper's exit report for the helper's exit record: its
// wait status, peak RSS, the task peak (0: not counted) and the first full
// tmpfs.
func (c *cHelperCall) exit(cr cReport) *exitReport {
	ws := unix.WaitStatus(uint32(cr.v[0]))
	er := &exitReport{MaxRSS: int64(cr.v[1]) * 1024}
	timedOut := cr.index&exitTimedOut != 0
	full := ""
	if i := cr.v[3]; i > 0 && int(i) <= len(c.tmp) {
		full = c.tmp[i-1]
	}
	if timedOut {
		er.Code, er.Signal, er.TimedOut = -1, int(unix.SIGKILL), true
		er.MaxRSS = 0
		er.Limit = limitVerdict(c.s.Limits, c.s.Mech, nil, 0, int(cr.v[2]), full)
		return er
	}
	er.setStatus(ws)
	er.Limit = limitVerdict(c.s.Limits, c.s.Mech, &ws, er.MaxRSS, int(cr.v[2]), full)
	return er
}

// cHelperSysProcAttr is what startHelper gives the Go helper, for the
// helper in C: the same namespaces and maps, a session of its own, killed
// with the server (the caller must start it from a locked thread, as
// startHelper does).
func cHelperSysProcAttr(uid, gid int, hostNetwork bool) *syscall.SysProcAttr {
	flags := uintptr(namespaceFlags)
	if hostNetwork {
		flags &^= syscall.CLONE_NEWNET
	}
	return &syscall.SysProcAttr{
		Cloneflags:                 flags,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: uid, Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: gid, Size: 1}},
		GidMappingsEnableSetgroups: false,
		Setsid:                     true,
		Pdeathsig:                  syscall.SIGKILL,
	}
}

// cHeldUserns is heldUserns done by the helper in C: it is started as a
// sandbox's helper is (a vfork and an exec of a few pages, where a new user
// namespace costs a Go process a full fork of itself), launches itself into
// a user namespace alone with the maps given, reports its pid and waits
// until that namespace is opened and the block pipe closed. It runs
// nothing else. Nil and an error where there is no helper in C.
func cHeldUserns(uidMap, gidMap string) (*os.File, error) {
	helper := cHelperFile()
	if helper == nil {
		return nil, errors.New("no helper in C")
	}
	block, err := encodeHelper(nil, func(b *blockWriter, hdr []uint64) {
		hdr[2] = helperStart | helperHold
		hdr[12], hdr[13] = ^uint64(0), ^uint64(0)
		hdr[16] = syscall.CLONE_NEWUSER
		hdr[17], hdr[18] = b.str(uidMap), b.str(gidMap)
	})
	if err != nil {
		return nil, bug(err)
	}
	blockR, blockW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer blockW.Close() // lets the held process end
	defer blockR.Close()
	repR, repW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer repR.Close()
	defer repW.Close()
	cmd := &exec.Cmd{
		Path:        "/proc/self/fd/5",
		Args:        []string{"nanosandbox-mcp: user namespace"},
		Env:         []string{},
		ExtraFiles:  []*os.File{blockR, repW, helper},
		SysProcAttr: &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL},
	}
	// Pdeathsig follows the thread that started it (startHelper).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	defer cmd.Wait()
	// Run first of these: ends the launcher, and through its death
	// signal the held process, once the namespace is open (or was not
	// to be had).
	defer cmd.Process.Kill()
	repW.Close()
	if _, err := blockW.Write(block); err != nil {
		return nil, err
	}
	buf := make([]byte, reportSize)
	if _, err := io.ReadFull(repR, buf); err != nil {
		return nil, errors.New("the helper in C ended before its user namespace was made")
	}
	cr := decodeCReport(buf)
	switch {
	case cr.magic == helperMagic && cr.kind == hkindSetup:
		return nil, (&cHelperCall{}).setupError(cr)
	case cr.magic != helperMagic || cr.kind != hkindHeld || cr.v[0] == 0 || cr.v[0] > 1<<22:
		return nil, bug(fmt.Errorf("the helper in C holding a user namespace reported %+v", cr))
	}
	// The process waits for the pipe to close: its pid is its own until
	// then.
	f, err := os.Open(fmt.Sprintf("/proc/%d/ns/user", cr.v[0]))
	if err != nil {
		return nil, fmt.Errorf("open its user namespace: %w", unwrap(err))
	}
	return f, nil
}
