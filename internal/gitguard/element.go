package gitguard

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// role is what a path is to the git directory that reads it.
type role uint8

const (
	roleEntry     role = iota // what git finds first: a .git entry, or a bare repository's directory
	roleGitdir                // the git directory a .git entry leads to
	roleCommondir             // gitdir/commondir, which moves config and hooks elsewhere
	roleConfig                // a config file git reads: config, config.worktree, an included file
	roleHooks                 // the hooks directory of a git directory (samples are inert)
	roleHooksPath             // a core.hooksPath directory (everything in it is a hook)
	roleWorktree              // the work tree core.worktree names, where git writes and deletes files
)

func (r role) String() string {
	return [...]string{"entry", "gitdir", "commondir", "config", "hooks", "hooksPath", "worktree"}[r]
}

// Caps on what the guard reads from a writable root.
const (
	maxGitfileBytes = 8 << 10 // a .git file or commondir holds one path
	maxHooks        = 1024    // entries of a hooks directory
	maxIncludeDepth = 10      // as git's own limit
)

// element is one path through which git would run code for a candidate,
// and what is there now.
type element struct {
	role role
	path string // on the host
	id   ident  // the zero ident when absent
	// odd says why it cannot be read safely, or is "".
	odd string
	// content is a config file's content, entries a hooks directory's.
	content []byte
	entries []dirEntry
	// user marks what the user's own config names (their core.hooksPath,
	// what their global config includes): outside the roots it is theirs,
	// not a command's redirection.
	user bool
	// main marks a git directory's own config and hooks directory (not
	// config.worktree, includes or core.hooksPath).
	main bool
}

// candidate is a place where git finds a repository: entry is dir/.git (of
// any kind), or, when bare, a directory git would take for a git directory
// itself.
type candidate struct {
	entry string
	bare  bool
}

// resolver follows a candidate to everything git would read from it.
type resolver struct {
	home string // the user's home, for "~/" in config paths
	// globalHooks are core.hooksPath values of the user's system and
	// global config, each relative to a repository's work tree or absolute.
	globalHooks []string
	list        func(path string, id ident, content []byte) ([]entry, error)
	// placeholder reports whether path is a stand-in the guard made, still
	// as made: it counts as absent.
	placeholder func(path string, id ident) bool
	// dirs caches hooks listings; used marks those used since the last
	// prune. Nil: no cache.
	dirs map[string]cachedDir
	used map[string]bool
	// statEntries reads each entry of a hooks directory (inode, size and
	// times), so that a hook rewritten in place counts as a change: where
	// nothing keeps hooks directories read-only during a call
	// (Config.Unmounted). The cache is not used then.
	statEntries bool
}

// resolve returns the elements of c, in a stable order: its entry, its git
// directory, commondir, config files (with what they include), hooks and
// core.hooksPath directories. It never follows a symlink to read a file,
// and stops at what it cannot read (odd set), as a failure to judge.
func (r *resolver) resolve(c candidate) []element {
	var out []element
	worktree := filepath.Dir(c.entry)
	var gitdir string
	if c.bare {
		id, _ := lstatIdent(c.entry)
		e := element{role: roleEntry, path: c.entry, id: ident{Kind: id.Kind, Dev: id.Dev, Ino: id.Ino}}
		out = append(out, e)
		if !id.isDir() {
			return out
		}
		gitdir, worktree = c.entry, c.entry
	} else {
		e, target := r.entry(c.entry)
		out = append(out, e)
		if e.odd != "" || target == "" {
			return out
		}
		gitdir = target
	}

	gid, err := lstatIdent(gitdir)
	g := element{role: roleGitdir, path: gitdir, id: ident{Kind: gid.Kind, Dev: gid.Dev, Ino: gid.Ino}}
	if err != nil {
		g.odd = err.Error()
	}
	out = append(out, g)
	if !gid.isDir() {
		return out // git finds no repository there
	}

	common := gitdir
	cd := element{role: roleCommondir, path: filepath.Join(gitdir, "commondir")}
	cd.id, err = lstatIdent(cd.path)
	switch {
	case err != nil:
		cd.odd = err.Error()
	case r.placeholder(cd.path, cd.id):
		cd.id = ident{}
	case cd.id.exists():
		b, id, err := readRegular(cd.path, maxGitfileBytes)
		cd.id = id
		if err != nil {
			cd.odd = err.Error()
			break
		}
		cd.id.Sum = contentSum(b)
		p := strings.TrimSuffix(string(b), "\n")
		if p == "" || strings.ContainsRune(p, 0) {
			cd.odd = "commondir holds no path"
			break
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(gitdir, p)
		}
		common, err = canonical(p)
		if err != nil {
			cd.odd = err.Error()
		}
	}
	out = append(out, cd)
	if cd.odd != "" {
		return out
	}

	seen := map[string]bool{}
	var hooksPaths []string // as written: relative ones are taken from the work tree
	coreWorktree := ""
	var addConfig func(path string, depth int)
	addConfig = func(path string, depth int) {
		if seen[path] || depth > maxIncludeDepth {
			return
		}
		seen[path] = true
		e, to := r.config(path)
		out = append(out, e)
		if to != "" {
			addConfig(to, depth+1) // git reads through the symlink
			return
		}
		if e.content == nil {
			return
		}
		entries, err := r.list(e.path, e.id, e.content)
		if err != nil {
			return // judged as it is; nothing more to follow
		}
		for _, en := range entries {
			switch {
			case (en.Section == "include" || en.Section == "includeif") && en.Name == "path" && en.HasValue:
				if p, ok := r.configPath(en.Value, filepath.Dir(path)); ok {
					addConfig(p, depth+1)
				}
			case en.Section == "core" && en.Subsection == "" && en.Name == "hookspath" && en.HasValue:
				hooksPaths = append(hooksPaths, en.Value)
			case en.Section == "core" && en.Subsection == "" && en.Name == "worktree" && en.HasValue:
				coreWorktree = en.Value
			}
		}
	}
	addConfig(filepath.Join(common, "config"), 0)
	for i := range out {
		if out[i].role == roleConfig {
			out[i].main = true
			break
		}
	}
	addConfig(filepath.Join(gitdir, "config.worktree"), 0)

	// core.worktree moves the work tree (relative to the git directory),
	// and with it where a relative core.hooksPath points. The work tree is
	// where the user's git writes (checkout, restore, reset, stash) and
	// deletes (clean): an element, as a redirection is, found through
	// every symlink as git finds it, so that one swapped in later moves it.
	if coreWorktree != "" {
		wt := element{role: roleWorktree}
		if p, ok := r.configPath(coreWorktree, gitdir); ok {
			worktree = p
			wt.path = p
			id, err := lstatIdent(p)
			wt.id = ident{Kind: id.Kind, Dev: id.Dev, Ino: id.Ino}
			if err != nil {
				wt.odd = err.Error()
			}
		} else {
			wt.path = filepath.Join(gitdir, "config")
			wt.odd = "core.worktree names a path the sandbox cannot resolve: " + coreWorktree
		}
		out = append(out, wt)
	}
	addHooks := func(ro role, p string, user bool) {
		for i := 0; i <= maxIncludeDepth && p != "" && !seen[p]; i++ {
			seen[p] = true
			var e element
			e, p = r.hooks(ro, p)
			e.user = user
			out = append(out, e)
		}
	}
	n := len(out)
	addHooks(roleHooks, filepath.Join(common, "hooks"), false)
	if len(out) > n {
		out[n].main = true
	}
	for _, h := range hooksPaths {
		if p, ok := r.configPath(h, worktree); ok {
			addHooks(roleHooksPath, p, false)
		}
	}
	for _, h := range r.globalHooks {
		if p, ok := r.configPath(h, worktree); ok {
			addHooks(roleHooksPath, p, true)
		}
	}
	return out
}

// entry reads a .git entry: a directory is the git directory; a file says
// "gitdir: PATH"; a symlink is followed as git follows it, to either.
func (r *resolver) entry(path string) (element, string) {
	e := element{role: roleEntry, path: path}
	id, err := lstatIdent(path)
	if err != nil {
		e.odd = err.Error()
		return e, ""
	}
	switch {
	case !id.exists():
		return e, ""
	case id.isDir():
		e.id = ident{Kind: id.Kind, Dev: id.Dev, Ino: id.Ino}
		return e, path
	case id.isReg():
		b, id, err := readRegular(path, maxGitfileBytes)
		e.id = id
		if err != nil {
			e.odd = err.Error()
			return e, ""
		}
		e.id.Sum = contentSum(b)
		target, err := parseGitfile(b, filepath.Dir(path))
		if err != nil {
			e.odd = err.Error()
			return e, ""
		}
		return e, target
	case id.isLink():
		e.id = id
		link, err := readLink(path)
		if err != nil {
			e.odd = err.Error()
			return e, ""
		}
		e.id.Sum = contentSum([]byte(link))
		to, err := canonical(path)
		if err != nil {
			e.odd = err.Error()
			return e, ""
		}
		tid, err := lstatIdent(to)
		switch {
		case err != nil:
			e.odd = err.Error()
		case !tid.exists():
			return e, ""
		case tid.isDir():
			return e, to
		case tid.isReg():
			b, _, err := readRegular(to, maxGitfileBytes)
			if err != nil {
				e.odd = err.Error()
				return e, ""
			}
			target, err := parseGitfile(b, filepath.Dir(path))
			if err != nil {
				e.odd = err.Error()
				return e, ""
			}
			return e, target
		default:
			e.odd = "it leads to a special file"
		}
		return e, ""
	default:
		e.id = id
		e.odd = "it is a special file"
		return e, ""
	}
}

// parseGitfile reads a .git file as git does: "gitdir: " then a path,
// trailing newlines and carriage returns dropped, relative to the file's
// directory. The target is returned canonical.
func parseGitfile(b []byte, dir string) (string, error) {
	rest, ok := bytes.CutPrefix(b, []byte("gitdir: "))
	if !ok {
		return "", errors.New("not a gitdir file")
	}
	rest = bytes.TrimRight(rest, "\r\n")
	if len(rest) == 0 || bytes.IndexByte(rest, 0) >= 0 {
		return "", errors.New("a gitdir file with no path")
	}
	p := string(rest)
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	return canonical(p)
}

// config reads a config file element. A symlink is an element of its own,
// and its target (returned) another: git reads through it.
func (r *resolver) config(path string) (element, string) {
	e := element{role: roleConfig, path: path}
	id, err := lstatIdent(path)
	switch {
	case err != nil:
		e.odd = err.Error()
	case !id.exists():
	case id.isLink():
		return r.link(e, id)
	case !id.isReg():
		e.id = id
		e.odd = "it is not a regular file"
	default:
		b, id, err := readRegular(path, maxConfigBytes)
		e.id = id
		if err != nil {
			e.odd = err.Error()
			break
		}
		if b == nil {
			b = []byte{}
		}
		e.content = b
	}
	return e, ""
}

// link records a symlink as an element, and returns where it leads.
func (r *resolver) link(e element, id ident) (element, string) {
	e.id = id
	l, err := readLink(e.path)
	if err != nil {
		e.odd = err.Error()
		return e, ""
	}
	e.id.Sum = contentSum([]byte(l))
	to, err := canonical(e.path)
	if err != nil {
		e.odd = err.Error()
		return e, ""
	}
	return e, to
}

// hooks reads a hooks directory element. A symlink is an element of its
// own, and its target (returned) another.
func (r *resolver) hooks(ro role, path string) (element, string) {
	e := element{role: ro, path: path}
	id, err := lstatIdent(path)
	switch {
	case err != nil:
		e.odd = err.Error()
	case !id.exists():
	case r.placeholder(path, id):
	case id.isLink():
		return r.link(e, id)
	case !id.isDir():
		e.id = id
		e.odd = "it is not a directory"
	default:
		// A listing is read again only when the directory changed: its
		// times move with every entry added, removed or renamed (a second
		// of settling covers coarse timestamps).
		if c, ok := r.dirs[path]; ok && !r.statEntries && c.id == id && time.Now().UnixNano()-id.Ctime > int64(time.Second) {
			r.used[path] = true
			e.id, e.entries = c.id, c.ents
			e.id.Sum = listingSum(c.ents)
			break
		}
		ents, did, err := listDir(path, maxHooks)
		if err != nil {
			e.id = id
			e.odd = err.Error()
			break
		}
		did.Size = 0 // a directory's size says nothing more than its listing
		if r.statEntries {
			for i := range ents {
				if st, err := lstatIdent(filepath.Join(path, ents[i].name)); err == nil && st.exists() {
					ents[i].id = st
				}
			}
		}
		if r.dirs != nil {
			r.dirs[path] = cachedDir{id: did, ents: ents}
			r.used[path] = true
		}
		e.id, e.entries = did, ents
		e.id.Sum = listingSum(ents)
	}
	return e, ""
}

// cachedDir is a listing, and the directory's state when it was read.
type cachedDir struct {
	id   ident
	ents []dirEntry
}

// prune forgets listings not used since the last prune.
func (r *resolver) prune() {
	for p := range r.dirs {
		if !r.used[p] {
			delete(r.dirs, p)
		}
	}
	r.used = map[string]bool{}
}

// configPath resolves a path from a config value as git does: "~/" is the
// user's home, a relative path is taken from base. Values git would not
// resolve to a file here ("~user/", "%(prefix)/") give false.
func (r *resolver) configPath(v, base string) (string, bool) {
	switch {
	case v == "":
		return "", false
	case v == "~" || strings.HasPrefix(v, "~/"):
		if r.home == "" {
			return "", false
		}
		v = filepath.Join(r.home, strings.TrimPrefix(v, "~"))
	case strings.HasPrefix(v, "~"), strings.HasPrefix(v, "%(prefix)/"):
		return "", false
	case !filepath.IsAbs(v):
		v = filepath.Join(base, v)
	}
	p, err := canonical(v)
	if err != nil {
		return filepath.Clean(v), true
	}
	return p, true
}

// canonical resolves every symlink in p as far as p exists, with lstat and
// readlink only (nothing is opened), and keeps the missing rest as written.
func canonical(p string) (string, error) {
	p = filepath.Clean(p)
	q, err := filepath.EvalSymlinks(p)
	if err == nil {
		return q, nil
	}
	if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, os.ErrNotExist) {
		var pe *fs.PathError
		if errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "not a directory") {
			return p, nil
		}
		return "", fmt.Errorf("resolve %q: %w", p, err)
	}
	parent := filepath.Dir(p)
	if parent == p {
		return p, nil
	}
	d, err := canonical(parent)
	if err != nil {
		return "", err
	}
	return filepath.Join(d, filepath.Base(p)), nil
}
