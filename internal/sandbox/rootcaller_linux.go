package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
)

// A root caller's commands do not run as root on the host.
//
// Without capabilities, uid 0 still passes every owner check on root's
// files: a command would read /etc/ssl/private/*, debconf's passwords,
// /proc/slabinfo, logs, and write root's sysctls but for Landlock. Hiding
// them one by one never ends, so the class is closed at its cause: the
// command runs as rootCallerID, a uid (and gid) of its own on the host, with
// no supplementary groups. Root's files outside the grants are then closed
// to it as to any other user's. Inside it still sees itself as uid 0.
//
// The grants stay the caller's, through idmapped mounts (Linux 5.12+): each
// granted path (the workspace, --writable and --read-only paths, the
// private home) is bound with a mapping that shows root's files as owned
// by rootCallerID, and writes the command's files as root's. So the
// workspace stays writable and what a command makes there belongs to root
// on the host, as it would had root made it; nothing lands on the host's
// disks owned by rootCallerID.
//
// The user namespaces, for a root caller:
//
//   - the helper's maps 0 to rootCallerID and 1 to root: the helper is
//     rootCallerID with every capability in its namespace, and root's files,
//     being mapped, are within reach of those capabilities, so it can still
//     walk to a workspace below a directory only root may enter. The
//     private trees it makes (/tmp, /run, ...) are rootCallerID's;
//   - the exec stage's maps 0 to the helper's 0, as for any caller: the
//     command is rootCallerID, and root (the helper's 1) is not mapped there
//     at all.
//
// Only the server, root on the host, may make an idmapped mount of the
// host's filesystems (CAP_SYS_ADMIN where they were mounted): it clones
// each grant, idmapped, for every helper it starts, and passes the trees as
// descriptors from idmapFD on; the helper mounts them over the same paths
// in its view of the host before it builds anything, so every later bind
// of a grant is one of them.
//
// What cannot hold is refused at start: a writable grant on a filesystem
// without idmapped mounts, a grant below a directory other users cannot
// enter, a binary other users cannot run. A read-only grant on such a
// filesystem is shown as it is: the command reads it as another user would.
//
// rootCallerID is 2147483646 (0x7ffffffe): in the range systemd leaves
// unused (1879048192…2147483647), below 2^31 (some programs take uids as
// signed), and neither 65534, nobody, which NFS and unmapped ids show as,
// nor 65535.
const rootCallerID = 0x7ffffffe

// idmapEnv names the helper's environment variable that lists, in JSON, the
// host paths whose idmapped trees it receives, one descriptor each from
// idmapFD on.
const (
	idmapEnv = "_NANOSANDBOX_IDMAPPED"
	idmapFD  = netFD + 1
)

// rootCaller is what the server keeps to run a root caller's commands.
type rootCaller struct {
	userns *os.File // a user namespace that maps 0 to rootCallerID: the grants' idmapping
	paths  []string // host paths mounted idmapped, none inside another

	// first holds the trees of paths newRootCaller made to see that they
	// can be made, while no helper has taken them: the first helper, when
	// started soon after (a one-shot command's, a server's dry run), is
	// given them rather than new ones. Each tree closed unused costs the
	// kernel a mount teardown and an RCU grace period.
	mu        sync.Mutex
	first     []*os.File
	firstMade time.Time
}

// newRootCaller prepares the idmapping of p's grants, or refuses the policy.
func newRootCaller(p *policy.Policy) (*rootCaller, error) {
	userns, err := idmapUserns()
	if err != nil {
		// The first user namespace made: a machine that refuses them
		// (a container's seccomp filter) is explained as the probe would.
		why, fix := diagnoseUserNS(err)
		return nil, &Refusal{
			Cause: fmt.Sprintf("cannot create user namespaces: %s (running as root, commands run as uid %d on the host, in a user namespace that maps it to root for the granted paths)", why, rootCallerID),
			Fix:   fix,
		}
	}
	r := &rootCaller{userns: userns}
	var idmapped []string
	for _, g := range grantRoots(p) {
		covered := false
		for _, done := range idmapped {
			covered = covered || policy.Within(g.path, done)
		}
		if covered {
			continue // inside a recursive idmapped tree already
		}
		tree, err := r.tree(g.path)
		if err != nil {
			if !g.writable {
				// Read as another user would: nothing opens that root
				// alone could. Grants inside it are tried on their own.
				continue
			}
			closeAll(r.takeFirst())
			userns.Close()
			if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
				// Not the filesystem (EINVAL): the mount itself is refused,
				// as a container's security profile refuses it.
				why, fix := readHostFacts().diagnose(err, true)
				return nil, &Refusal{Cause: "user namespaces give no capabilities here: " + why, Fix: fix}
			}
			return nil, &Refusal{
				Cause: fmt.Sprintf("running as root, commands run as uid %d on the host and write %s through an idmapped mount, which its filesystem does not allow here: %v", rootCallerID, g.path, err),
				Fix:   "put the workspace and --writable paths on a filesystem that allows idmapped mounts (ext4, xfs, btrfs, tmpfs, overlayfs), or run the server as a regular user",
			}
		}
		r.first = append(r.first, tree)
		idmapped = append(idmapped, g.path)
	}
	r.paths, r.firstMade = idmapped, time.Now()
	if rf := rootReachable(p, idmapped); rf != nil {
		closeAll(r.takeFirst())
		userns.Close()
		return nil, rf
	}
	return r, nil
}

// grantRoot is a host path a root caller's commands reach as the caller.
type grantRoot struct {
	path     string
	writable bool
}

// grantRoots lists p's grants and private home, each path once (writable
// if any grant of it is), shortest first: an outer path before those
// inside it, which its recursive idmapped tree covers.
func grantRoots(p *policy.Policy) []grantRoot {
	var out []grantRoot
	add := func(path string, writable bool) {
		for i := range out {
			if out[i].path == path {
				out[i].writable = out[i].writable || writable
				return
			}
		}
		out = append(out, grantRoot{path, writable})
	}
	for _, g := range p.Grants {
		add(g.Path, g.Writable)
	}
	if p.PrivateHome != "" {
		add(p.PrivateHome, true)
	}
	sort.SliceStable(out, func(i, j int) bool { return len(out[i].path) < len(out[j].path) })
	return out
}

// rootReachable refuses a grant that rootCallerID cannot reach: one below a
// directory of the host's view (not one the sandbox makes, nor a grant) that
// other users may not enter. It also refuses a binary other users cannot
// run, since the command's stage starts from it as rootCallerID.
func rootReachable(p *policy.Policy, idmapped []string) *Refusal {
	if exe, err := os.Executable(); err == nil {
		if fi, err := os.Stat(exe); err == nil && fi.Mode().Perm()&0o001 == 0 {
			return &Refusal{
				Cause: fmt.Sprintf("running as root, commands start from this binary, %s, as uid %d, and other users may not run it (mode %04o)", exe, rootCallerID, fi.Mode().Perm()),
				Fix:   "chmod o+rx " + exe + ", or run the server as a regular user",
			}
		}
	}
	made := append([]string{"/dev/shm"}, policy.PrivateDirs...)
	if p.Home != "" && !p.HomeGranted {
		made = append(made, p.Home)
	}
	var grants []string
	for _, g := range p.Grants {
		grants = append(grants, g.Path)
	}
	return unreachable(grants, made, idmapped)
}

// unreachable refuses the first of grants below a directory other users may
// not enter, walking up from each to / but stopping at a tree the sandbox
// makes (made) or an idmapped one, where rootCallerID is the owner.
func unreachable(grants, made, idmapped []string) *Refusal {
	within := func(path string, roots []string) bool {
		for _, r := range roots {
			if policy.Within(path, r) {
				return true
			}
		}
		return false
	}
	for _, g := range grants {
		for dir := filepath.Dir(g); ; dir = filepath.Dir(dir) {
			if within(dir, made) || within(dir, idmapped) {
				break
			}
			if fi, err := os.Stat(dir); err == nil && fi.Mode().Perm()&0o001 == 0 {
				return &Refusal{
					Cause: fmt.Sprintf("running as root, commands run as uid %d on the host, which may not enter %s (mode %04o) on the way to %s", rootCallerID, dir, fi.Mode().Perm(), g),
					Fix:   fmt.Sprintf("let other users through it (chmod o+x %s), choose a path elsewhere, or run the server as a regular user", dir),
				}
			}
			if dir == "/" {
				break
			}
		}
	}
	return nil
}

// idmapUserns returns a user namespace whose uid and gid 0 are rootCallerID
// on the host. It lives in a child made for it: the helper in C where it
// was built (cHeldUserns, the cheapest); else one stopped at its exec (see
// heldUserns); where that cannot be done, one that runs this binary and
// does nothing: a child that has exited but has not been waited
// for keeps its credentials, and the namespace with them, for as long as
// it takes to open it. A failure is the second's.
func idmapUserns() (*os.File, error) {
	if useCHelper() {
		m := fmt.Sprintf("0 %d 1\n", rootCallerID)
		if f, err := cHeldUserns(m, m); err == nil {
			return f, nil
		}
	}
	if f, err := heldUserns(true); err == nil {
		return f, nil
	}
	return heldUserns(false)
}

// heldUserns starts a child in a new user namespace that maps 0 to
// rootCallerID, opens that namespace, and ends the child.
//
// With stopped, the child asks to be traced (PTRACE_TRACEME) before its
// exec, so the kernel stops it with SIGTRAP once the exec succeeds, before
// it runs one instruction of the new image: the namespace is held without
// a Go start-up (about 3 ms of CPU). This process makes no ptrace request:
// it only opens the namespace, kills the child and reaps it. The child is
// its own, unprivileged (rootCallerID), and never runs code of its own;
// tracing it gives nothing to anyone else. Where tracing is refused (Yama's
// ptrace_scope 3, a seccomp filter), it fails, and the caller starts the
// child that does nothing instead.
func heldUserns(stopped bool) (*os.File, error) {
	cmd := exec.Command("/proc/self/exe")
	cmd.Env = []string{childEnv + "=noop"}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: rootCallerID, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: rootCallerID, Size: 1}},
		Ptrace:      stopped,
	}
	if stopped {
		// The tracer is the thread that starts the child (see
		// syscall.SysProcAttr.Ptrace): the same one until it is reaped.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start a process in a new user namespace: %w", err)
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/ns/user", cmd.Process.Pid))
	if stopped {
		cmd.Process.Kill() // a stopped tracee ends on SIGKILL alone
	}
	cmd.Wait()
	if err != nil {
		return nil, fmt.Errorf("open its user namespace: %w", unwrap(err))
	}
	return f, nil
}

// tree returns a detached copy of the mount tree at path, idmapped by
// r.userns, nosuid and nodev, and recursive: what is mounted below path
// comes along.
func (r *rootCaller) tree(path string) (*os.File, error) {
	fd, err := unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer unix.Close(fd)
	tree, err := unix.OpenTree(fd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH|unix.AT_RECURSIVE)
	if err != nil {
		return nil, fmt.Errorf("open_tree %s: %w", path, err)
	}
	attr := unix.MountAttr{
		Attr_set:  unix.MOUNT_ATTR_IDMAP | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV,
		Userns_fd: uint64(r.userns.Fd()),
	}
	err = unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr)
	runtime.KeepAlive(r.userns)
	if err != nil {
		unix.Close(tree)
		return nil, fmt.Errorf("mount_setattr(MOUNT_ATTR_IDMAP) %s: %w", path, err)
	}
	return os.NewFile(uintptr(tree), path), nil
}

// helper sets up cmd, a helper about to start, for a root caller: its user
// namespace's maps, no supplementary groups, and the idmapped trees of the
// grants as descriptors. It returns the trees, for the caller to close once
// the helper has started.
func (r *rootCaller) helper(cmd *exec.Cmd) ([]*os.File, error) {
	if len(cmd.ExtraFiles) != idmapFD-3 {
		return nil, bug(fmt.Errorf("helper has %d inherited descriptors before the idmapped trees, want %d", len(cmd.ExtraFiles), idmapFD-3))
	}
	if trees := r.takeFirst(); trees != nil {
		return r.give(cmd, trees)
	}
	var trees []*os.File
	for _, p := range r.paths {
		t, err := r.tree(p)
		if err != nil {
			closeAll(trees)
			return nil, err
		}
		trees = append(trees, t)
	}
	return r.give(cmd, trees)
}

// takeFirst returns the trees newRootCaller made, if no helper took them
// and they were made within freshPlan (a tree is a copy of the mounts as
// they were), and closes them otherwise; nil after the first call.
func (r *rootCaller) takeFirst() []*os.File {
	r.mu.Lock()
	trees := r.first
	r.first = nil
	r.mu.Unlock()
	if trees != nil && time.Since(r.firstMade) >= freshPlan {
		closeAll(trees)
		return nil
	}
	return trees
}

func closeAll(fs []*os.File) {
	for _, f := range fs {
		f.Close()
	}
}

// give passes trees, one per path of r.paths, to the helper cmd starts,
// with its maps and credential.
func (r *rootCaller) give(cmd *exec.Cmd, trees []*os.File) ([]*os.File, error) {
	paths, err := json.Marshal(r.paths)
	if err != nil {
		return nil, bug(err)
	}
	cmd.ExtraFiles = append(cmd.ExtraFiles, trees...)
	cmd.Env = append(cmd.Env, idmapEnv+"="+string(paths))
	ids := []syscall.SysProcIDMap{{ContainerID: 0, HostID: rootCallerID, Size: 1}, {ContainerID: 1, HostID: 0, Size: 1}}
	a := cmd.SysProcAttr
	a.UidMappings, a.GidMappings = ids, ids
	// The helper drops root's supplementary groups itself (setgroups needs
	// to be allowed in its namespace, which only a privileged parent can
	// leave so), then becomes its namespace's 0: rootCallerID.
	a.GidMappingsEnableSetgroups = true
	a.Credential = &syscall.Credential{Uid: 0, Gid: 0, Groups: []uint32{}}
	return trees, nil
}

// own gives a pipe the server made for a helper to rootCallerID, so that a
// root caller's command can reopen its stdio by name (tee /dev/stderr),
// which the kernel checks against the pipe's owner. It does nothing for
// another caller (r nil), whose command owns the server's pipes already.
// The one-shot command line passes the caller's own terminal or files,
// which stay root's: a root caller's command writes them through its
// descriptors, but cannot reopen them by name.
func (r *rootCaller) own(pipe *os.File) error {
	if r == nil {
		return nil
	}
	rc, err := pipe.SyscallConn()
	if err != nil {
		return err
	}
	var cerr error
	if err := rc.Control(func(fd uintptr) { cerr = unix.Fchown(int(fd), rootCallerID, rootCallerID) }); err != nil {
		return err
	}
	if cerr != nil {
		return fmt.Errorf("fchown pipe: %w", cerr)
	}
	return nil
}

// attachIdmapped mounts the idmapped trees a root caller's helper received
// over the same paths in its view of the host (below oldRoot), and closes
// them. It does nothing for another caller. It runs right after
// enterScratch, before the exec stage starts, so no descriptor leaks into it.
func attachIdmapped() error {
	v, ok := os.LookupEnv(idmapEnv)
	if !ok {
		return nil
	}
	var paths []string
	if err := json.Unmarshal([]byte(v), &paths); err != nil {
		return bug(fmt.Errorf("%s: %w", idmapEnv, err))
	}
	for i, p := range paths {
		fd := idmapFD + i
		err := attach(fd, oldRoot+p)
		unix.Close(fd)
		if err != nil {
			return setupError("idmapped mount "+p, err)
		}
	}
	return nil
}
