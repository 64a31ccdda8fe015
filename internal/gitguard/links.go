package gitguard

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// A symbolic link inside a git directory is a way out of the writable
// roots for the user's own git, which writes much of a git directory with
// a plain open that follows it, not with a lock file renamed into place:
// it appends reflogs (logs/HEAD, through a linked logs/refs/), writes
// FETCH_HEAD, COMMIT_EDITMSG and MERGE_MSG, rerere's rr-cache and the
// packs of a linked objects/pack. A reflog line holds a branch name and a
// merge message a tag's text, so a link to a shell's rc file turns them
// into code; one to another repository's hook, inside a root, does too.
// Git itself makes no link there. So the rule is structural, not a list of
// the files git opens so: every symbolic link made in a git directory
// while calls ran is removed when a call ends, wherever it points. The
// user's own links, older than the calls, stay.
//
// The finders report the directories to look in (takeLinked): those in a
// git directory that they read and found holding a link, those in which
// something was created or moved in, and those that came into a git
// directory. The links found in them while no call runs are the user's,
// trusted as git directories are: by path, and by an identity no command
// can give a link it makes (its inode and change time, which creating or
// renaming it sets). At the end of a call every other link there goes: one
// made during the call, an old one moved in, or one in a directory that
// became a git directory. A server that was killed during a call left no
// trust behind: the next takes every link changed since that call began
// for the call's.

// maxLinkNotes bounds the links a note names one by one.
const maxLinkNotes = 10

// linkID is what a symbolic link is, beyond its path.
type linkID struct {
	dev, ino uint64
	ctime    int64
}

// takeLinked adds what the finder reports to the directories to look in.
func (g *Guard) takeLinked() {
	for _, d := range g.find.takeLinked() {
		if g.linkDirs == nil {
			g.linkDirs = map[string]bool{}
		}
		g.linkDirs[d] = true
	}
}

// trustLinks trusts the links in the directories reported, while no call
// runs: the user's.
func (g *Guard) trustLinks() {
	for dir := range g.linkDirs {
		kind, root, _ := g.place(dir)
		if kind != inside {
			delete(g.links, dir)
			continue
		}
		_, _, kept, _ := removeLinksIn(root, dir, func(string, linkID) bool { return false })
		g.setTrusted(dir, kept)
	}
	g.linkDirs = nil
}

func (g *Guard) setTrusted(dir string, ids map[string]linkID) {
	if len(ids) == 0 {
		delete(g.links, dir)
		return
	}
	if g.links == nil {
		g.links = map[string]map[string]linkID{}
	}
	g.links[dir] = ids
}

// removeUntrusted removes the links in the directories reported that are
// not trusted, and returns the notes.
func (g *Guard) removeUntrusted() []string {
	notes := g.removeLinks(func(dir, name string, id linkID) bool {
		t, ok := g.links[dir][name]
		return !ok || t != id
	}, true)
	g.linkDirs = nil
	return notes
}

// removeSince removes the links in the directories reported that changed
// at since or later, for a call a killed server did not end. The
// directories stay reported, for the trust of the next call.
func (g *Guard) removeSince(since int64) []string {
	return g.removeLinks(func(_, _ string, id linkID) bool { return id.ctime >= since }, false)
}

// removeLinks removes the links made, as made says, in the directories
// reported; with keep, what is left there is what is trusted there.
func (g *Guard) removeLinks(made func(dir, name string, id linkID) bool, keep bool) []string {
	var removed, notes []string
	links := 0
	for dir := range g.linkDirs {
		kind, root, _ := g.place(dir)
		if kind != inside {
			continue // a grant of the user's by name, or gone from the roots
		}
		r, n, kept, err := removeLinksIn(root, dir, func(name string, id linkID) bool { return made(dir, name, id) })
		removed = append(removed, r...)
		links += n
		if keep {
			g.setTrusted(dir, kept)
		}
		if err != nil {
			g.logf("git guard: symbolic links in %s: %v", dir, err)
			notes = append(notes, fmt.Sprintf("git: %s, in a git directory, could not be checked for symbolic links made by a call (%v); tell the user not to run git there until it is", g.show(dir), err))
		}
	}
	if len(removed) == 0 {
		return notes
	}
	sort.Strings(removed)
	var shown []string
	for i, p := range removed {
		if i == maxLinkNotes {
			shown = append(shown, fmt.Sprintf("and %d more", len(removed)-i))
			break
		}
		shown = append(shown, g.show(p))
	}
	g.logf("git guard: removed %d symbolic links and %d special files made in git directories: %v", links, len(removed)-links, removed)
	what := "symbolic links or special files"
	switch {
	case len(removed) == 1 && links == 1:
		what = "a symbolic link"
	case len(removed) == 1:
		what = "a special file (a FIFO, socket or device)"
	case links == len(removed):
		what = "symbolic links"
	case links == 0:
		what = "special files (FIFOs, sockets or devices)"
	}
	return append(notes, fmt.Sprintf("git: removed %s: %s made inside a git directory while a call ran, through which the user's own git would write wherever it leads, or on which it would wait for ever (git makes none there)", strings.Join(shown, ", "), what))
}

// removeLinksIn removes the symbolic links and special files in dir, below
// root, that made says a call made, and returns them, how many of them were
// links, and those kept. It opens dir
// without following any symlink, reads it as it is now, and removes each
// entry only while it is still a symbolic link.
func removeLinksIn(root, dir string, made func(name string, id linkID) bool) (removed []string, links int, kept map[string]linkID, err error) {
	rel, err := filepath.Rel(root, dir)
	if err != nil {
		return nil, 0, nil, err
	}
	pfd, err := openBeneath(root, rel)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
			return nil, 0, nil, nil // gone since
		}
		return nil, 0, nil, err
	}
	fd, err := unix.Openat(pfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	unix.Close(pfd)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("open %q: %w", dir, err)
	}
	f := os.NewFile(uintptr(fd), dir)
	defer f.Close()
	for {
		ents, err := f.ReadDir(512)
		for _, e := range ents {
			// A FIFO, socket or device there too: git opens what it names
			// (packed-refs, logs/HEAD, FETCH_HEAD, gc.log) and waits on a
			// FIFO for ever. Git's fsmonitor daemon's socket is git's.
			if e.Type()&(os.ModeSymlink|os.ModeNamedPipe|os.ModeSocket|os.ModeDevice) == 0 || e.Name() == "fsmonitor--daemon.ipc" {
				continue // the type comes with the name (ReadDir lstats where a filesystem does not say)
			}
			var st unix.Stat_t
			if unix.Fstatat(fd, e.Name(), &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
				continue
			}
			switch st.Mode & unix.S_IFMT {
			case unix.S_IFLNK, unix.S_IFIFO, unix.S_IFSOCK, unix.S_IFCHR, unix.S_IFBLK:
			default:
				continue
			}
			id := identOf(&st)
			lid := linkID{dev: id.Dev, ino: id.Ino, ctime: id.Ctime}
			if !made(e.Name(), lid) {
				if kept == nil {
					kept = map[string]linkID{}
				}
				kept[e.Name()] = lid
				continue
			}
			err := unix.Unlinkat(fd, e.Name(), 0)
			if errors.Is(err, unix.EACCES) && allowWrite(fd) {
				err = unix.Unlinkat(fd, e.Name(), 0) // a command took write permission away
			}
			if err != nil && !errors.Is(err, unix.ENOENT) {
				return removed, links, kept, fmt.Errorf("remove %q: %w", filepath.Join(dir, e.Name()), err)
			}
			removed = append(removed, filepath.Join(dir, e.Name()))
			if st.Mode&unix.S_IFMT == unix.S_IFLNK {
				links++
			}
		}
		if err == io.EOF || len(ents) == 0 {
			return removed, links, kept, nil
		}
		if err != nil {
			return removed, links, kept, fmt.Errorf("read directory %q: %w", dir, err)
		}
	}
}
