package policy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// A path the user gave, or the server derives from what the user has
// (PATH, the global git config), is resolved again at every start. A
// symbolic link on the way that lies where commands write (the workspace,
// a --writable path, the server's state with every private home) is
// theirs to re-point between starts: the next start would grant, show or
// read whatever it then names (~/.bashrc writable, ~/.ssh unmasked). Such
// a path is refused, or, where the server derived it, left out.

// linkIn returns the first symbolic link the kernel meets on the way to
// path (absolute) that lies in one of dirs, or "". A link's target is
// followed as the kernel follows it.
func linkIn(path string, dirs []string) string {
	_, link, _ := resolveIn(path, dirs)
	return link
}

// errMissing is resolveIn's error for a path that does not resolve: a
// component is missing, or a link cannot be read or leads too far.
var errMissing = errors.New("does not resolve")

// resolveIn walks to path (absolute) as the kernel does, following every
// symbolic link, in one pass: it returns what path resolves to (as
// filepath.EvalSymlinks would), or errMissing; and the first link met on
// the way that lies in one of dirs (linkIn), where the walk then stops,
// as it does at a link that cannot be followed, which it also returns.
func resolveIn(path string, dirs []string) (real, link string, err error) {
	return ResolveWith(hostLinks{}, path, dirs)
}

// LinkFS is what [ResolveWith] asks of a filesystem: whether a path
// exists and is a symbolic link (not following a final one), and a
// link's target.
type LinkFS interface {
	Lstat(path string) (exists, dir, symlink bool)
	Readlink(path string) (string, error)
}

// hostLinks is the host's filesystem, as a LinkFS.
type hostLinks struct{}

func (hostLinks) Lstat(path string) (exists, dir, symlink bool) {
	fi, err := os.Lstat(path)
	if err != nil {
		return false, false, false
	}
	return true, fi.IsDir(), fi.Mode()&os.ModeSymlink != 0
}

func (hostLinks) Readlink(path string) (string, error) { return os.Readlink(path) }

// ResolveWith is resolveIn, asking fsys: the sandbox's planning resolves
// through a filesystem that records its answers.
func ResolveWith(fsys LinkFS, path string, dirs []string) (real, link string, err error) {
	return walk(fsys, path, dirs, false)
}

// ResolveCreate walks to path (absolute) as open(2) with O_CREAT does: every
// symbolic link followed, a final one too, and a last component that is
// missing (a dangling link's target too) taken as the file open would
// create. It returns what path resolves to, or errMissing; and the first
// path the walk visits that lies in one of dirs, link or not, where the
// walk then stops: a file there is theirs to write, a link theirs to
// re-point, a directory theirs to replace by a link. A path whose walk
// visits none of dirs cannot be made to lead elsewhere by whoever writes
// there.
func ResolveCreate(path string, dirs []string) (real, in string, err error) {
	return walk(hostLinks{}, path, dirs, true)
}

// walk is ResolveWith (create false: only a link is stopped at in dirs) and
// ResolveCreate (create true).
func walk(fsys LinkFS, path string, dirs []string, create bool) (real, at string, err error) {
	const maxLinks = 40
	rest := strings.Split(filepath.Clean(path), "/")
	cur := "/"
	for links := 0; len(rest) > 0; {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		if create && within(next, dirs) {
			return "", next, errMissing
		}
		exists, _, symlink := fsys.Lstat(next)
		if !exists {
			if create && len(rest) == 0 {
				return next, "", nil
			}
			return "", "", errMissing
		}
		if !symlink {
			cur = next
			continue
		}
		if within(next, dirs) {
			return "", next, errMissing
		}
		// A link that cannot be followed is returned as met (ResolveWith),
		// but by ResolveCreate only where it lies in dirs.
		unfollowed := next
		if create {
			unfollowed = ""
		}
		if links++; links > maxLinks {
			return "", unfollowed, errMissing
		}
		to, err := fsys.Readlink(next)
		if err != nil {
			return "", unfollowed, errMissing
		}
		if filepath.IsAbs(to) {
			cur = "/"
		}
		rest = append(strings.Split(to, "/"), rest...)
	}
	return cur, "", nil
}

// within reports whether path lies in one of dirs ("" is none).
func within(path string, dirs []string) bool {
	for _, d := range dirs {
		if d != "" && Within(path, d) {
			return true
		}
	}
	return false
}

// ThroughWritableLink returns the symbolic link on the way to path that
// commands can re-point ([Policy.CommandWritable]), or "".
func (p *Policy) ThroughWritableLink(path string) string {
	return linkIn(path, p.CommandWritable())
}

// Shows reports whether what the server derived at path may be shown or
// read for commands: not through a link they can re-point, not the
// server's state, not a credential.
func (p *Policy) Shows(path string) bool {
	real, link, err := resolveIn(path, p.CommandWritable())
	if err != nil || link != "" {
		return false
	}
	if p.StateDir != "" && Within(real, resolvePartly(p.StateDir)) {
		return false
	}
	return p.Home == "" || !isCredential(real, p.Home)
}
