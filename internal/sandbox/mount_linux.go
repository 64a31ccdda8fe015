package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The helper builds the new root on a scratch tmpfs mounted over the old
// /tmp, then pivots into it: the host tree is at oldRoot, the command's tree
// is assembled at newRoot, and a final pivot_root makes newRoot "/".
const (
	scratch   = "/tmp"
	newRoot   = "/newroot"
	oldRoot   = "/oldroot"
	emptyFile = "/empty" // bound read-only over masked files
)

// devices are bound from the host's /dev into the minimal one.
var devices = []string{"null", "zero", "full", "random", "urandom", "tty"}

// buildRoot assembles the command's mount tree and pivots into it
// (DESIGN.md §3, steps 2 to 4). It runs in the helper, uid 0 in its own user
// and mount namespaces.
//
// enterScratch must have run first. moved is told of what was moved out
// of the way of a mount point (makeMountPoint).
func buildRoot(ops []mountOp, tmpBytes int64, moved func(movedAside)) error {
	// The host tree, read-only, nosuid and nodev all the way down: one
	// recursive mount_setattr, since a plain remount changes only the top.
	if err := bindTree(oldRoot, newRoot, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV, false); err != nil {
		return err
	}
	if err := buildProc(); err != nil {
		return err
	}
	if err := buildDev(tmpBytes); err != nil {
		return err
	}

	var seal []int // hidden trees, made read-only once their mount points exist
	for _, op := range ops {
		fd, err := runOp(op, moved)
		if err != nil {
			return err
		}
		if fd >= 0 {
			seal = append(seal, fd)
		}
	}
	for _, fd := range seal {
		if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
			return setupError("mount_setattr read-only", err)
		}
		unix.Close(fd)
	}

	// The final pivot: newRoot becomes "/", and the scratch root with the
	// old tree below it is detached.
	if err := unix.Chdir(newRoot); err != nil {
		return setupError("chdir "+newRoot, err)
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return setupError("pivot_root .", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return setupError("umount old root", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return setupError("chdir /", err)
	}
	return nil
}

// enterScratch is the part of building the root that needs no spec: the
// mounts made private, and a pivot into a scratch tmpfs with the host tree
// below it at oldRoot. After it this process's root is its mount
// namespace's, which creating a nested user namespace requires.
func enterScratch() error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return setupError("mount --make-rprivate /", err)
	}
	if err := unix.Mount("tmpfs", scratch, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=64k"); err != nil {
		return setupError("mount tmpfs "+scratch, err)
	}
	for _, d := range []string{newRoot, oldRoot, "/proc"} {
		if err := os.Mkdir(scratch+d, 0o755); err != nil {
			return setupError("mkdir "+d, unwrap(err))
		}
	}
	if err := os.WriteFile(scratch+emptyFile, nil, 0o444); err != nil {
		return setupError("create "+emptyFile, unwrap(err))
	}
	if err := unix.PivotRoot(scratch, scratch+oldRoot); err != nil {
		return setupError("pivot_root "+scratch, err)
	}
	if err := unix.Chdir("/"); err != nil {
		return setupError("chdir /", err)
	}
	// This pid namespace's /proc, for starting the exec stage: its uid
	// and gid maps are written there, and /proc/self/exe is this binary.
	// It goes with the scratch root at the final pivot.
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return setupError("mount proc on the scratch root", err)
	}
	return nil
}

// tmpfsModeSize is the root mode and size of op's tmpfs, as both helpers
// mount it: 0755 unless the plan says, and 1 MiB for a hidden tree, which
// holds mount points only before it is sealed.
func tmpfsModeSize(op mountOp) (mode uint32, size int64) {
	mode, size = op.Mode, op.Size
	if mode == 0 {
		mode = 0o755
	}
	if op.Kind == opHide {
		size = 1 << 20
	}
	return mode, size
}

// runOp performs one step. For a hidden tree it returns the mount's fd, to be
// sealed read-only at the end; otherwise -1. Where the plan allows it
// (op.Make), the mount point of a tree (a tmpfs, a bind, a pin) is made
// first, before anything is opened: a pin's source is its own mount
// point. (A mask, or a protected symlink, covers what exists.)
func runOp(op mountOp, moved func(movedAside)) (int, error) {
	target := newRoot + op.Path
	if op.Make && op.Kind != opMask && !op.Link {
		dir := op.Dir || op.Kind == opTmpfs || op.Kind == opHide
		if err := makeMountPoint(target, dir, moved); err != nil {
			return -1, setupError(opDesc(op), err)
		}
	}
	switch op.Kind {
	case opTmpfs, opHide:
		mode, size := tmpfsModeSize(op)
		mfd, err := newTmpfs(fmt.Sprintf("%o", mode), size)
		if err != nil {
			return -1, setupError("tmpfs "+op.Path, err)
		}
		if err := attach(mfd, target); err != nil {
			unix.Close(mfd)
			return -1, setupError(opDesc(op), err)
		}
		if op.Kind == opHide {
			return mfd, nil
		}
		unix.Close(mfd)
		return -1, nil
	case opMask:
		tree, err := cloneTree(emptyFile, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC, false)
		if err != nil {
			return -1, setupError(opDesc(op), err)
		}
		defer unix.Close(tree)
		// A credential file gone since the plan was made (the host
		// moved it a moment ago) has nothing left to hide: the call
		// runs, and the next plan is made from what is there. A missing
		// mask failed the call, which anyone who can rename a file in
		// some home could time against every call of every server.
		if err := attach(tree, target); errors.Is(err, unix.ENOENT) {
			return -1, nil
		} else if err != nil {
			return -1, setupError(opDesc(op), err)
		}
	case opProtect, opPin:
		// A carve-out planned from the host a moment ago may be gone by
		// now (another call removed it): nothing to keep, and git's part
		// is judged when the call ends.
		err := protect(target, op)
		if errors.Is(err, unix.ENOENT) {
			return -1, nil
		}
		if err != nil {
			return -1, setupError(opDesc(op), err)
		}
	case opBindRO, opBindRW:
		var attr uint64 = unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV
		if op.Kind == opBindRO {
			attr |= unix.MOUNT_ATTR_RDONLY
		}
		tree, err := cloneTree(oldRoot+op.Src, attr, true)
		if err != nil {
			return -1, setupError(opDesc(op), err)
		}
		defer unix.Close(tree)
		if err := attach(tree, target); err != nil {
			return -1, setupError(opDesc(op), err)
		}
	default:
		return -1, &SetupError{Op: "mount", Err: fmt.Sprintf("unknown step %d", op.Kind)}
	}
	return -1, nil
}

// opDesc names op in a setup error, as both helpers do.
func opDesc(op mountOp) string {
	switch op.Kind {
	case opTmpfs, opHide:
		return "mount tmpfs " + op.Path
	}
	return op.Kind.String() + " " + op.Path
}

// protect binds target onto itself: read-only for a carve-out, as it is
// for a pin. A symlink (op.Link) is bound as itself, so that it can be
// neither removed nor replaced.
func protect(target string, op mountOp) error {
	var attr uint64 = unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV
	if op.Kind == opProtect {
		attr |= unix.MOUNT_ATTR_RDONLY
	}
	if !op.Link {
		tree, err := cloneTree(target, attr, true)
		if err != nil {
			return err
		}
		defer unix.Close(tree)
		return attach(tree, target)
	}
	fd, err := unix.Openat2(unix.AT_FDCWD, target, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return fmt.Errorf("open %s: %w", strings.TrimPrefix(target, newRoot), err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFLNK {
		return fmt.Errorf("%s: %w", strings.TrimPrefix(target, newRoot), unix.ENOENT) // no longer the symlink planned
	}
	tree, err := unix.OpenTree(fd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH)
	if err != nil {
		return fmt.Errorf("open_tree: %w", err)
	}
	defer unix.Close(tree)
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH, &unix.MountAttr{Attr_set: attr, Propagation: unix.MS_PRIVATE}); err != nil {
		return fmt.Errorf("mount_setattr: %w", err)
	}
	if err := unix.MoveMount(tree, "", fd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("move_mount: %w", err)
	}
	return nil
}

// bindTree clones the tree at src recursively and mounts it at dst.
func bindTree(src, dst string, attr uint64, dir bool) error {
	tree, err := cloneTree(src, attr, true)
	if err != nil {
		return setupError("bind "+src, err)
	}
	defer unix.Close(tree)
	if err := attach(tree, dst); err != nil {
		return setupError("bind "+src+" on "+dst, err)
	}
	return nil
}

// openNoFollow opens path as O_PATH without following any symlink on the
// way: a path a command could have changed since the plan was made is
// refused rather than followed.
func openNoFollow(path string) (int, error) {
	fd, err := unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if errors.Is(err, unix.ELOOP) {
		return -1, fmt.Errorf("%s: a symbolic link is in the way", strings.TrimPrefix(strings.TrimPrefix(path, newRoot), oldRoot))
	}
	if err != nil {
		return -1, fmt.Errorf("open %s: %w", strings.TrimPrefix(strings.TrimPrefix(path, newRoot), oldRoot), err)
	}
	return fd, nil
}

// cloneTree returns a detached copy of the mount tree at path with attr set
// and private propagation.
func cloneTree(path string, attr uint64, recursive bool) (int, error) {
	fd, err := openNoFollow(path)
	if err != nil {
		return -1, err
	}
	defer unix.Close(fd)
	flags := uint(unix.OPEN_TREE_CLONE | unix.OPEN_TREE_CLOEXEC | unix.AT_EMPTY_PATH)
	if recursive {
		flags |= unix.AT_RECURSIVE
	}
	tree, err := unix.OpenTree(fd, "", flags)
	if err != nil {
		return -1, fmt.Errorf("open_tree: %w", err)
	}
	setFlags := uint(unix.AT_EMPTY_PATH)
	if recursive {
		setFlags |= unix.AT_RECURSIVE
	}
	if err := unix.MountSetattr(tree, "", setFlags, &unix.MountAttr{Attr_set: attr, Propagation: unix.MS_PRIVATE}); err != nil {
		unix.Close(tree)
		return -1, fmt.Errorf("mount_setattr: %w", err)
	}
	return tree, nil
}

// newTmpfs returns a detached tmpfs mount with the given root mode and
// size (0: the kernel's default).
func newTmpfs(mode string, size int64) (int, error) {
	fs, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("fsopen: %w", err)
	}
	defer unix.Close(fs)
	if err := unix.FsconfigSetString(fs, "mode", mode); err != nil {
		return -1, fmt.Errorf("fsconfig mode: %w", err)
	}
	if size > 0 {
		if err := unix.FsconfigSetString(fs, "size", strconv.FormatInt(size, 10)); err != nil {
			return -1, fmt.Errorf("fsconfig size: %w", err)
		}
	}
	if err := unix.FsconfigCreate(fs); err != nil {
		return -1, fmt.Errorf("fsconfig create: %w", err)
	}
	mfd, err := unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
	if err != nil {
		return -1, fmt.Errorf("fsmount: %w", err)
	}
	return mfd, nil
}

// attach moves the detached mount tree onto target.
func attach(tree int, target string) error {
	tfd, err := openNoFollow(target)
	if err != nil {
		return err
	}
	defer unix.Close(tfd)
	if err := unix.MoveMount(tree, "", tfd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("move_mount: %w", err)
	}
	return nil
}

// movedAside is what makeMountPoint moved out of the way of a mount point.
type movedAside struct {
	Path string `json:"path"` // where it was, as the command sees it
	N    int    `json:"n"`    // it is now Path + ".nanosandbox-moved-N"
	Mode uint32 `json:"mode"` // its type (the S_IFMT bits; 0 when fstat failed)
	Dir  bool   `json:"dir"`  // a directory belongs there, else a regular file
}

// movedSuffix and maxMoved name what is moved aside: NAME becomes
// NAME.nanosandbox-moved-N, for the first N from 1 to maxMoved that is
// free, else one of movedGuesses numbers past them from the clock.
const (
	movedSuffix  = ".nanosandbox-moved-"
	maxMoved     = 1000
	movedGuesses = 64
)

// movedGuess is the try'th number past maxMoved to try: the clock's
// nanoseconds and seconds, mixed with try, in 1001..2000001000.
func movedGuess(try int) int {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	v := uint64(ts.Nsec) ^ uint64(ts.Sec)<<20 ^ uint64(try)*2654435761
	return maxMoved + 1 + int(v%2000000000)
}

// makeMountPoint makes sure target, below newRoot, is a directory (dir)
// or else a regular file, and that every component above it is a
// directory, creating what is missing. The plan asks for it only inside
// trees the sandbox owns (its tmpfs, the private home), which commands
// write: whatever is in the way there, of any type (a directory where a
// file belongs, a file or a FIFO where a directory does, a symbolic link
// anywhere), an earlier command left, and it is moved aside beside itself
// (movedSuffix), never removed and never followed; moved is told. Each
// component is opened beneath the last one without following symbolic
// links, so a concurrent command's swaps end in the private home, or in a
// failure.
func makeMountPoint(target string, dir bool, moved func(movedAside)) error {
	rel := strings.TrimPrefix(target, newRoot+"/")
	parts := strings.Split(rel, "/")
	cur, err := unix.Open(newRoot, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", newRoot, err)
	}
	defer func() { unix.Close(cur) }()
	how := &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC | unix.O_NOFOLLOW, Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_BENEATH}
	for i, name := range parts {
		at := "/" + strings.Join(parts[:i+1], "/")
		wantDir := i < len(parts)-1 || dir
		var want uint32 = unix.S_IFREG
		if wantDir {
			want = unix.S_IFDIR
		}
		next, err := unix.Openat2(cur, name, how)
		var mode uint32
		switch {
		case err == nil:
			var st unix.Stat_t
			if ferr := unix.Fstat(next, &st); ferr == nil {
				mode = st.Mode & unix.S_IFMT
			}
			if mode == want {
				unix.Close(cur)
				cur = next
				continue
			}
			unix.Close(next)
		case errors.Is(err, unix.ELOOP):
			mode = unix.S_IFLNK
		case errors.Is(err, unix.ENOENT):
		default:
			return fmt.Errorf("mount point %s: %w", at, err)
		}
		if err == nil || mode == unix.S_IFLNK {
			n, merr := moveAside(cur, name)
			if merr != nil {
				return fmt.Errorf("mount point %s: move aside what is in the way: %w", at, merr)
			}
			if moved != nil {
				moved(movedAside{Path: at, N: n, Mode: mode, Dir: wantDir})
			}
		}
		if wantDir {
			if err := unix.Mkdirat(cur, name, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
				return fmt.Errorf("mkdir %s: %w", at, err)
			}
		} else {
			fd, err := unix.Openat(cur, name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o644)
			if err != nil {
				return fmt.Errorf("create %s: %w", at, err)
			}
			unix.Close(fd)
		}
		next, err = unix.Openat2(cur, name, how)
		if err != nil {
			return fmt.Errorf("open %s: %w", at, err)
		}
		unix.Close(cur)
		cur = next
	}
	return nil
}

// moveAside renames name in the directory dirfd to the first free
// name+movedSuffix+N, and returns N. The rename never replaces anything;
// where the filesystem cannot promise that (RENAME_NOREPLACE: EINVAL, as
// on NFS), a name that does not exist is renamed onto, and a command
// racing to make it loses at worst what it made.
func moveAside(dirfd int, name string) (int, error) {
	for try := 1; try <= maxMoved+movedGuesses; try++ {
		n := try
		if try > maxMoved {
			// Every fixed name taken (a command made them): names it
			// cannot have guessed, from the clock (moved_guess in
			// helper.c).
			n = movedGuess(try - maxMoved)
		}
		to := name + movedSuffix + strconv.Itoa(n)
		err := unix.Renameat2(dirfd, name, dirfd, to, unix.RENAME_NOREPLACE)
		if errors.Is(err, unix.EINVAL) {
			var st unix.Stat_t
			if serr := unix.Fstatat(dirfd, to, &st, unix.AT_SYMLINK_NOFOLLOW); errors.Is(serr, unix.ENOENT) {
				err = unix.Renameat2(dirfd, name, dirfd, to, 0)
			} else {
				err = unix.EEXIST
			}
		}
		if !errors.Is(err, unix.EEXIST) {
			return n, err
		}
	}
	return 0, unix.EEXIST
}

// buildProc replaces the host's /proc with one for the new pid namespace.
// It must happen before the final pivot, while the host's proc is still
// fully visible (the kernel requires that for a proc mount in a user
// namespace).
func buildProc() error {
	unix.Unmount(newRoot+"/proc", unix.MNT_DETACH) // the host's, copied with the tree
	if err := unix.Mount("proc", newRoot+"/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return setupError("mount proc", err)
	}
	return nil
}

// readOnlyProc binds /proc/sys, and /proc/sysrq-trigger where the kernel
// has it, onto themselves read-only: Landlock's read-only / already refuses
// writes there, and this is the second layer. It matters most for a root
// caller, whose command would otherwise pass the owner check on sysctls
// such as kernel.core_pattern (a program run as root on the host at the
// next crash), and for every caller on the sysctls of the sandbox's own
// network namespace. The helper calls it after the final pivot, once it has
// written the one sysctl the sandbox sets (its pid namespace's pid_max).
func readOnlyProc() error {
	for _, p := range []string{"/proc/sys", "/proc/sysrq-trigger"} {
		exists, _, _ := hostFS{}.Lstat(p)
		if !exists {
			if p == "/proc/sys" {
				return &SetupError{Op: "bind " + p + " read-only", Err: "no such directory"}
			}
			continue // a kernel without CONFIG_MAGIC_SYSRQ
		}
		tree, err := cloneTree(p, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC, true)
		if err != nil {
			return setupError("bind "+p+" read-only", err)
		}
		err = attach(tree, p)
		unix.Close(tree)
		if err != nil {
			return setupError("bind "+p+" read-only", err)
		}
	}
	return nil
}

// buildDev replaces the host's /dev with a minimal one: a few devices bound
// from the host, a private devpts and a private /dev/shm.
func buildDev(tmpBytes int64) error {
	dev := newRoot + "/dev"
	unix.Unmount(dev, unix.MNT_DETACH) // the host's, copied with the tree
	mfd, err := newTmpfs("755", 1<<20)
	if err != nil {
		return setupError("tmpfs /dev", err)
	}
	defer unix.Close(mfd)
	if err := attach(mfd, dev); err != nil {
		return setupError("mount tmpfs /dev", err)
	}
	for _, d := range devices {
		host := oldRoot + "/dev/" + d
		if _, err := os.Stat(host); err != nil {
			continue
		}
		if err := os.WriteFile(dev+"/"+d, nil, 0o644); err != nil {
			return setupError("create /dev/"+d, unwrap(err))
		}
		// Not nodev: these are the host's device nodes, on the host's mount.
		tree, err := cloneTree(host, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC, false)
		if err != nil {
			return setupError("bind /dev/"+d, err)
		}
		err = attach(tree, dev+"/"+d)
		unix.Close(tree)
		if err != nil {
			return setupError("bind /dev/"+d, err)
		}
	}
	for _, d := range []string{"pts", "shm"} {
		if err := os.Mkdir(dev+"/"+d, 0o755); err != nil {
			return setupError("mkdir /dev/"+d, unwrap(err))
		}
	}
	if err := unix.Mount("devpts", dev+"/pts", "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=620"); err != nil {
		return setupError("mount devpts", err)
	}
	shm, err := newTmpfs("1777", tmpBytes)
	if err != nil {
		return setupError("tmpfs /dev/shm", err)
	}
	err = attach(shm, dev+"/shm")
	unix.Close(shm)
	if err != nil {
		return setupError("mount tmpfs /dev/shm", err)
	}
	for name, target := range map[string]string{
		"ptmx": "pts/ptmx", "fd": "/proc/self/fd", "stdin": "/proc/self/fd/0",
		"stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2",
	} {
		if err := os.Symlink(target, filepath.Join(dev, name)); err != nil {
			return setupError("symlink /dev/"+name, unwrap(err))
		}
	}
	if err := unix.MountSetattr(mfd, "", unix.AT_EMPTY_PATH, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
		return setupError("mount_setattr /dev read-only", err)
	}
	return nil
}
