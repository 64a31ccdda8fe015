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
// enterScratch must have run first.
func buildRoot(ops []mountOp, tmpBytes int64) error {
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
		fd, err := runOp(op)
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
// sealed read-only at the end; otherwise -1.
func runOp(op mountOp) (int, error) {
	target := newRoot + op.Path
	switch op.Kind {
	case opTmpfs, opHide:
		mode, size := tmpfsModeSize(op)
		mfd, err := newTmpfs(fmt.Sprintf("%o", mode), size)
		if err != nil {
			return -1, setupError("tmpfs "+op.Path, err)
		}
		if err := attach(mfd, target, true, op.Make); err != nil {
			unix.Close(mfd)
			return -1, setupError("mount tmpfs "+op.Path, err)
		}
		if op.Kind == opHide {
			return mfd, nil
		}
		unix.Close(mfd)
		return -1, nil
	case opMask:
		tree, err := cloneTree(emptyFile, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC, false)
		if err != nil {
			return -1, setupError("mask "+op.Path, err)
		}
		defer unix.Close(tree)
		if err := attach(tree, target, false, false); err != nil {
			return -1, setupError("mask "+op.Path, err)
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
			return -1, setupError(op.Kind.String()+" "+op.Path, err)
		}
	case opBindRO, opBindRW:
		src := target
		if op.Kind == opBindRO || op.Kind == opBindRW {
			src = oldRoot + op.Src
		}
		var attr uint64 = unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV
		if op.Kind == opBindRO || op.Kind == opProtect {
			attr |= unix.MOUNT_ATTR_RDONLY
		}
		tree, err := cloneTree(src, attr, true)
		if err != nil {
			return -1, setupError(op.Kind.String()+" "+op.Path, err)
		}
		defer unix.Close(tree)
		if err := attach(tree, target, op.Dir, op.Make); err != nil {
			return -1, setupError(op.Kind.String()+" "+op.Path, err)
		}
	default:
		return -1, &SetupError{Op: "mount", Err: fmt.Sprintf("unknown step %d", op.Kind)}
	}
	return -1, nil
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
		return attach(tree, target, op.Dir, false)
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
	if err := attach(tree, dst, true, false); err != nil {
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

// attach moves the detached mount tree onto target, creating the mount
// point first when create is set.
func attach(tree int, target string, dir, create bool) error {
	tfd, err := openNoFollow(target)
	if err != nil && create {
		if merr := makeMountPoint(target, dir); merr != nil {
			return merr
		}
		tfd, err = openNoFollow(target)
	}
	if err != nil {
		return err
	}
	defer unix.Close(tfd)
	if err := unix.MoveMount(tree, "", tfd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("move_mount: %w", err)
	}
	return nil
}

// makeMountPoint creates target (a directory, or an empty file) and any
// missing parent below newRoot. It is only asked to inside trees the sandbox
// owns (its tmpfs, the private home), where a symlink or a file in the way
// was left by an earlier command and is replaced.
func makeMountPoint(target string, dir bool) error {
	rel := strings.TrimPrefix(target, newRoot+"/")
	parts := strings.Split(rel, "/")
	cur, err := unix.Open(newRoot, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", newRoot, err)
	}
	defer func() { unix.Close(cur) }()
	for i, name := range parts {
		last := i == len(parts)-1
		wantDir := !last || dir
		next, err := unix.Openat2(cur, name, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC | unix.O_NOFOLLOW, Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_BENEATH})
		if err == nil {
			var st unix.Stat_t
			if ferr := unix.Fstat(next, &st); ferr == nil && (st.Mode&unix.S_IFMT == unix.S_IFDIR) == wantDir && st.Mode&unix.S_IFMT != unix.S_IFLNK {
				unix.Close(cur)
				cur = next
				continue
			}
			unix.Close(next)
			// Something else is in the way: replace it.
			if uerr := unix.Unlinkat(cur, name, 0); uerr != nil {
				return fmt.Errorf("mount point /%s: remove what is in the way: %w", strings.Join(parts[:i+1], "/"), uerr)
			}
		} else if !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ELOOP) {
			return fmt.Errorf("mount point /%s: %w", strings.Join(parts[:i+1], "/"), err)
		} else if errors.Is(err, unix.ELOOP) {
			if uerr := unix.Unlinkat(cur, name, 0); uerr != nil {
				return fmt.Errorf("mount point /%s: remove symlink: %w", strings.Join(parts[:i+1], "/"), uerr)
			}
		}
		if wantDir {
			if err := unix.Mkdirat(cur, name, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
				return fmt.Errorf("mkdir /%s: %w", strings.Join(parts[:i+1], "/"), err)
			}
		} else {
			fd, err := unix.Openat(cur, name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o644)
			if err != nil {
				return fmt.Errorf("create /%s: %w", strings.Join(parts[:i+1], "/"), err)
			}
			unix.Close(fd)
		}
		next, err = unix.Openat2(cur, name, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC | unix.O_NOFOLLOW, Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_BENEATH})
		if err != nil {
			return fmt.Errorf("open /%s: %w", strings.Join(parts[:i+1], "/"), err)
		}
		unix.Close(cur)
		cur = next
	}
	return nil
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
		exists, dir, _ := hostFS{}.Lstat(p)
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
		err = attach(tree, p, dir, false)
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
	if err := attach(mfd, dev, true, false); err != nil {
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
		err = attach(tree, dev+"/"+d, false, false)
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
	err = attach(shm, dev+"/shm", true, false)
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
