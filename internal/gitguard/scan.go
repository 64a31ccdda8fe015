package gitguard

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"golang.org/x/sys/unix"
)

// What a directory holds that makes it a place where git finds a
// repository: a .git entry of any kind, or (for git to take the directory
// itself for a git directory) HEAD with objects/ and refs/, or commondir.
const (
	hasDotgit uint8 = 1 << iota
	hasHEAD
	hasObjects
	hasRefs
	hasCommondir
)

var markers = map[string]uint8{".git": hasDotgit, "HEAD": hasHEAD, "objects": hasObjects, "refs": hasRefs, "commondir": hasCommondir}

// inGitdir is no marker: it marks a directory that is a git directory or
// lies in one, where a symbolic link is a way out (links.go).
const inGitdir uint8 = 1 << 7

// gitLike reports whether markers make a directory one git takes for a git
// directory: as git's is_git_directory, HEAD, and objects/ and refs/ here
// or in the directory commondir names. (HEAD with refs/ alone is a reflog
// directory, .git/logs.)
func gitLike(flags uint8) bool {
	return flags&hasHEAD != 0 && (flags&hasObjects != 0 && flags&hasRefs != 0 || flags&hasCommondir != 0)
}

// withGitdir is flags with inGitdir set as the directory at path earns
// it: named .git in any case, taken by git for a git directory, or below
// one. It is computed again whenever a directory or its parent is read.
func withGitdir(path string, flags, parentFlags uint8) uint8 {
	flags &^= inGitdir
	if parentFlags&inGitdir != 0 || gitLike(flags) || markerOf(filepath.Base(path)) == hasDotgit {
		flags |= inGitdir
	}
	return flags
}

// candidatesOf lists the candidates a directory with these markers holds.
// A ".git" directory is found as its parent's entry, not again as a bare
// repository.
func candidatesOf(dir string, flags uint8, parentFlags uint8) []candidate {
	var out []candidate
	if flags&hasDotgit != 0 {
		out = append(out, candidate{entry: filepath.Join(dir, ".git")})
	}
	if gitLike(flags) && !(markerOf(filepath.Base(dir)) == hasDotgit && parentFlags&hasDotgit != 0) {
		out = append(out, candidate{entry: dir, bare: true})
	}
	return out
}

// Limits on a walk. No clock: the end of a call walks whatever is there,
// however long that takes, for a directory left unread is one whose
// repositories stay live for the user's git. What a call can make, it made
// within its own time limit, and reading a directory costs less than
// making it (one openat of one name, one getdents: a few microseconds at
// any depth). What remains bounds the server's memory: the directories a
// walk visits (each costs the finders their state, and a walk's stack its
// names); past it the walk fails, and the end of the call fails closed
// (Call.End): what the walk found is judged, and calls are refused.
const (
	maxWalkDirs = 2_000_000
	maxPath     = 4095 // PATH_MAX less its NUL: git cannot work in a directory named longer (getcwd fails)
)

// walkDirsLimit is maxWalkDirs; tests lower it.
var walkDirsLimit = maxWalkDirs

// afterRead, set by tests only, runs once a directory is read, as a
// command making a directory at that moment would.
var afterRead func(path string)

// errTooLarge is a walk that hit a limit.
var errTooLarge = errors.New("too many directories")

// walker visits every directory below a root that commands can reach, and
// calls visit with its markers. It opens each directory without following a
// symlink and never descends into a symlink: a root by its path, refusing
// a symlink anywhere in it, and every directory below by its name in its
// parent, open while its subdirectories are walked (openat with
// O_NOFOLLOW, one component, as the kernel resolves a path one component
// at a time). Opening each by its whole path made the kernel resolve
// every component again, the cost of a directory growing with its depth
// (hundreds of microseconds near PATH_MAX). A walk holds one descriptor
// per level, at most maxPath/2.
//
// No directory is left out, not even an object store (objects/, lfs/,
// annex/ of a git directory): a command names any directory a git directory
// by putting HEAD in it, and a path below one is still a path where the
// user's git goes, as a gitlink's work tree (x/objects/sub, or
// bare.git/objects/sub below a real bare repository) or as a submodule's
// git directory (.git/modules/x/objects/m). Knowing what git makes there
// (fan-out directories of files, pack/, info/, tmp_objdir-* quarantines,
// each holding its own) would still take one reading of each directory to
// see that it holds nothing else, which is all a directory of files costs
// the walk: one getdents, and no stat for a file (readDir).
type walker struct {
	skip func(path string) bool // hidden paths
	// opened, if set, is called with each directory once it is open and
	// before it is read: a watch added then sees every entry made after
	// the reading begins, so none falls between the two.
	opened func(path string, fd int) error
	visit  func(path string, fd int, st dirState, parentFlags uint8) error
	dirs   int
}

// dirState is what reading a directory tells.
type dirState struct {
	id    ident
	flags uint8    // its markers, and inGitdir
	kids  []string // the subdirectories a scan enters, sorted
	// links: it holds a symbolic link and lies in a git directory.
	links bool
}

func (w *walker) walk(root string, parentFlags uint8) error {
	return w.walkDir(-1, root, len(root), parentFlags)
}

// walkDir walks the directory at path, found in the directory open at
// parent (by its path when parent is -1).
func (w *walker) walkDir(parent int, path string, rootLen int, parentFlags uint8) error {
	w.dirs++
	if w.dirs > walkDirsLimit {
		return fmt.Errorf("%w: more than %d below the writable roots", errTooLarge, walkDirsLimit)
	}
	f, st, err := listAt(parent, path, rootLen, parentFlags, w.skip, w.opened)
	if f == nil {
		return err
	}
	defer f.Close() // after the subdirectories: they are opened in it
	fd := int(f.Fd())
	if err := w.visit(path, fd, st, parentFlags); err != nil {
		return err
	}
	for _, d := range st.kids {
		if err := w.walkDir(fd, path+"/"+d, rootLen, st.flags); err != nil {
			return err
		}
	}
	return nil
}

// openDirAt opens the directory path names: its last name in the
// directory open at parent, refusing a symbolic link (O_NOFOLLOW), or,
// when parent is -1, the whole path, refusing one anywhere in it.
func openDirAt(parent int, path string) (int, error) {
	const flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NONBLOCK | unix.O_CLOEXEC
	if parent < 0 {
		return openNoSymlinks(path, flags)
	}
	fd, err := unix.Openat(parent, filepath.Base(path), flags|unix.O_NOFOLLOW, 0)
	if errors.Is(err, unix.ELOOP) {
		return -1, fmt.Errorf("%w: a symbolic link is in %s", errOdd, path)
	}
	if err != nil {
		return -1, fmt.Errorf("open %q: %w", path, err)
	}
	return fd, nil
}

// listAt opens the directory path names, found in the directory open at
// parent (openDirAt), whose flags are parentFlags, and reads its state.
// The file is returned open (for a watch to be added through it), or nil,
// with no error, when the directory is gone, is no directory, or is not
// ours to read.
func listAt(parent int, path string, rootLen int, parentFlags uint8, skip func(string) bool, opened func(string, int) error) (*os.File, dirState, error) {
	fd, err := openDirAt(parent, path)
	if errors.Is(err, unix.EACCES) && allowReadAt(parent, path) {
		fd, err = openDirAt(parent, path)
	}
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, errOdd) || errors.Is(err, unix.ENAMETOOLONG) {
			return nil, dirState{}, nil // gone, or replaced by a symlink since it was listed
		}
		if errors.Is(err, unix.EACCES) {
			// Not ours to open, so not one a command (running as this
			// user) could have written in either.
			return nil, dirState{}, nil
		}
		return nil, dirState{}, err
	}
	f := os.NewFile(uintptr(fd), path)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		f.Close()
		return nil, dirState{}, fmt.Errorf("fstat %q: %w", path, err)
	}
	if euid := os.Geteuid(); euid != 0 && int(st.Uid) == euid && st.Mode&0o100 == 0 {
		// Readable but not searchable (0600): its entries list, and none
		// of them opens. Search is given back, as read is (allowRead):
		// the directory is this user's, so a command's to have changed.
		unix.Fchmod(fd, uint32(st.Mode&0o7777|0o700))
	}
	if opened != nil {
		if err := opened(path, fd); err != nil {
			f.Close()
			return nil, dirState{}, err
		}
	}
	flags, dirs, links, err := readDir(f)
	if afterRead != nil {
		afterRead(path)
	}
	if err != nil {
		f.Close()
		return nil, dirState{}, err
	}
	flags = withGitdir(path, flags, parentFlags)
	kept := dirs[:0]
	for _, d := range dirs {
		child := path + "/" + d
		if skip(child) || len(child) > maxPath {
			continue
		}
		kept = append(kept, d)
	}
	sort.Strings(kept)
	return f, dirState{id: identOf(&st), flags: flags, kids: kept, links: links && flags&inGitdir != 0}, nil
}

func sortCandidates(c []candidate) {
	sort.Slice(c, func(i, j int) bool {
		if c[i].entry != c[j].entry {
			return c[i].entry < c[j].entry
		}
		return !c[i].bare && c[j].bare
	})
}
