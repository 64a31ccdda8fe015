package sandbox

import (
	"bytes"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
)

// A hidden directory can be reachable through another mount as well: a
// bind mount of the home elsewhere, a second mount of the filesystem that
// holds it (an ostree system's /sysroot, a disk mounted twice). The
// read-only host view copies every mount, so hiding by path would leave
// those open. The sandbox hides by the filesystem object instead: it finds
// every mount of the same filesystem that shows the hidden object, or a
// part of it, from the mount table, checks on the host that the path there
// is that object (same mount, same device and inode), and hides it there
// too.

// mountEntry is one line of /proc/self/mountinfo.
type mountEntry struct {
	ID    int
	Dev   string // "major:minor" of the filesystem
	Root  string // the directory of the filesystem mounted there
	Point string // where it is mounted
}

// parseMountinfo reads /proc/PID/mountinfo; lines it cannot read are
// skipped.
func parseMountinfo(b []byte) []mountEntry {
	var out []mountEntry
	for _, line := range bytes.Split(b, []byte("\n")) {
		f := strings.Fields(string(line))
		if len(f) < 5 {
			continue
		}
		id, err := strconv.Atoi(f[0])
		if err != nil || !strings.Contains(f[2], ":") {
			continue
		}
		root, point := unescapeMountinfo(f[3]), unescapeMountinfo(f[4])
		if !filepath.IsAbs(root) || !filepath.IsAbs(point) {
			continue // a mount outside this root, or not a path
		}
		out = append(out, mountEntry{ID: id, Dev: f[2], Root: filepath.Clean(root), Point: filepath.Clean(point)})
	}
	return out
}

// unescapeMountinfo undoes the kernel's octal escapes (\040 for a space,
// \011, \012, \134).
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// aliasCandidate is a place where, by the mount table, another mount shows
// a hidden object.
type aliasCandidate struct {
	Path  string // where it shows
	Mount int    // the mount that shows it there
	// Part is set when the mount shows only a part of the object (its root
	// lies inside it): Path is then that mount's mount point.
	Part bool
}

// aliasCandidates returns where else the object at path shows, given that
// path is reached through the mount with ID mount.
func aliasCandidates(mounts []mountEntry, path string, mount int) []aliasCandidate {
	var m *mountEntry
	for i := range mounts {
		if mounts[i].ID == mount {
			m = &mounts[i]
		}
	}
	if m == nil || !policy.Within(path, m.Point) {
		return nil
	}
	// The object's path inside its filesystem.
	obj := filepath.Join(m.Root, strings.TrimPrefix(path, m.Point))
	var out []aliasCandidate
	for _, n := range mounts {
		if n.ID == m.ID || n.Dev != m.Dev {
			continue
		}
		switch {
		case policy.Within(obj, n.Root):
			out = append(out, aliasCandidate{Path: filepath.Join(n.Point, strings.TrimPrefix(obj, n.Root)), Mount: n.ID})
		case policy.Within(n.Root, obj):
			out = append(out, aliasCandidate{Path: n.Point, Mount: n.ID, Part: true})
		}
	}
	return out
}

// aliasFinder finds where else hidden objects show; hostFS is one, and
// planning tests fake it. Aliases returns, for each path that exists, the
// other paths that show it or a part of it.
type aliasFinder interface {
	Aliases(paths []string) map[string][]alias
}

// alias is another place a hidden object shows.
type alias struct {
	Path string
	Part bool // only a part of the object shows there
}

// checkAliasGrants refuses a writable grant that is, or contains, another
// mount of the home: the grant would make the home writable there, as a
// workspace of ~ would (see policy's writableHome).
func checkAliasGrants(p *policy.Policy, homeAliases []string) error {
	for _, a := range homeAliases {
		for _, g := range p.Grants {
			if g.Writable && policy.Within(a, g.Path) {
				what := "is your home directory " + p.Home + ", mounted again"
				if a != g.Path {
					what = "contains your home directory " + p.Home + ", mounted again at " + a
				}
				return &policy.FlagError{
					Flag:  g.Flag,
					Value: g.Path,
					Err:   what + ": commands could write ~/.bashrc, ~/.profile, ~/.gitconfig and ~/.local/bin, which run outside the sandbox later",
					Hint:  "pass a project directory inside your home (" + g.Flag + " " + filepath.Join(p.Home, "project") + ")",
				}
			}
		}
	}
	return nil
}
