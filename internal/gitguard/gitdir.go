package gitguard

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
)

// A git directory is read by more than git's own C code: git's scripted
// commands and companions read names there that git never writes, and run
// them (git instaweb runs $GIT_DIR/gitweb/lighttpd where no lighttpd is
// installed, and keeps a config planted beside it). So every entry at the
// top of a git directory that git (2.39) and its usual companions do not
// write there is untrusted when a call makes it: moved aside when the call
// ends. The user's own, there while no call ran, stay.

// gitdirNames are the entries git keeps at the top of a git directory or
// a linked worktree's (path.c, common_list; every git_path of the source),
// and those of the companions that keep state there: git-gui, gitk,
// git-lfs, git-annex, git-svn, git filter-repo.
var gitdirNames = map[string]bool{
	"HEAD": true, "config": true, "config.worktree": true, "description": true, "index": true,
	"packed-refs": true, "shallow": true, "commondir": true, "gitdir": true, "locked": true,
	"objects": true, "refs": true, "logs": true, "hooks": true, "info": true, "branches": true,
	"remotes": true, "worktrees": true, "modules": true, "rr-cache": true, "svn": true, "common": true,
	"lost-found": true, "rebase-merge": true, "rebase-apply": true, "sequencer": true,
	"rebased-patches": true, "gc.pid": true, "gc.log": true, "fsmonitor--daemon.ipc": true, "fsmonitor--daemon": true,
	"ORIG_HEAD": true, "FETCH_HEAD": true, "MERGE_HEAD": true, "MERGE_MSG": true, "MERGE_MODE": true,
	"MERGE_RR": true, "MERGE_AUTOSTASH": true, "AUTO_MERGE": true, "CHERRY_PICK_HEAD": true,
	"REVERT_HEAD": true, "REBASE_HEAD": true, "BISECT_LOG": true, "BISECT_NAMES": true,
	"BISECT_START": true, "BISECT_TERMS": true, "BISECT_EXPECTED_REV": true,
	"BISECT_ANCESTORS_OK": true, "BISECT_RUN": true, "BISECT_HEAD": true, "BISECT_FIRST_PARENT": true,
	"COMMIT_EDITMSG": true, "TAG_EDITMSG": true, "NOTES_EDITMSG": true, "EDIT_DESCRIPTION": true,
	"SQUASH_MSG": true, "ADD_EDIT.patch": true, "REPLACE_EDITOBJ": true,
	"GITGUI_MSG": true, "GITGUI_BCK": true, "GITGUI_EDITMSG": true, "gitk.cache": true,
	"lfs": true, "annex": true, "filter-repo": true, "subtree-cache": true,
	// Tools that keep state there that they read as data: git-machete's
	// branch layout, guilt's patch queue (patches it applies to the work
	// tree, as any change a command makes there), git-crypt's keys,
	// git-branchless's database.
	"machete": true, "patches": true, "git-crypt": true, "branchless": true, "gitbutler": true,
}

// gitdirPrefixes are the families of names git makes there: lock files
// (.lock after any name), a split index's shared parts and their
// temporary files, git stash's and git commit's temporary indexes, git
// notes merge's state, fast-import's crash reports.
var gitdirPrefixes = []string{"sharedindex.", "sharedindex_", "shallow_", "index.stash.", "next-index-", "NOTES_MERGE_", "fast_import_crash_"}

// gitKeeps reports whether git, or a companion, keeps an entry of this name
// at the top of a git directory.
func gitKeeps(name string) bool {
	if gitdirNames[name] || strings.HasSuffix(name, ".lock") || strings.Contains(name, quarantineSuffix) {
		return true // (and what the guard moved aside)
	}
	for _, p := range gitdirPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// strayEntries reads the entries of a git directory that git keeps no such
// entry as: the element's entries, with what each is, and its digest.
func (r *resolver) strayEntries(gitdir string) element {
	e := element{role: roleStray, path: gitdir}
	id, err := lstatIdent(gitdir)
	if err != nil {
		e.odd = err.Error()
		return e
	}
	if !id.isDir() {
		return e
	}
	ents, err := r.gitdirEntries(gitdir, func(name string) bool { return !gitKeeps(name) || name == "BISECT_START" })
	if err != nil {
		e.odd = err.Error()
		return e
	}
	// BISECT_START is git's to keep, and holds where git bisect reset
	// goes back to (git checkout NAME): a branch name or an object id,
	// never an option ("-f" would throw the user's changes away).
	for i := 0; i < len(ents); i++ {
		if ents[i].name == "BISECT_START" {
			if b, _, err := readRegular(filepath.Join(gitdir, "BISECT_START"), 4096); err == nil && plainBisectStart(b) {
				ents = append(ents[:i], ents[i+1:]...)
				i--
			}
		}
	}
	e.id = ident{Kind: id.Kind, Dev: id.Dev, Ino: id.Ino}
	if len(ents) == 0 {
		return e
	}
	// What is in a stray directory counts too: git instaweb keeps its
	// config, and runs the user's, from gitweb/.
	// One too large or deep to read is judged by its own identity only:
	// the rest of the git directory is not its hostage.
	budget := maxStrayEntries
	for i := range ents {
		if ents[i].id.isDir() {
			sum, err := treeSum(filepath.Join(gitdir, ents[i].name), ents[i].id, 0, &budget)
			if err != nil {
				sum = unreadSum
			}
			ents[i].id.Sum = sum
		}
	}
	e.entries = ents
	e.id.Sum = listingSum(ents)
	for _, en := range ents {
		e.id.Sum ^= en.id.Sum
	}
	return e
}

// maxStrayEntries bounds what is read below the stray entries of a git
// directory: past it, an entry is unreadSum.
const maxStrayEntries = 10_000

// unreadSum stands for what is below a stray directory too large or deep
// to read.
const unreadSum = 1

// plainBisectStart reports whether BISECT_START's content is what git
// bisect start writes: one branch name or object id, which git bisect
// reset checks out, with no blank or control character in it and not
// beginning with "-".
func plainBisectStart(b []byte) bool {
	v := strings.TrimSuffix(string(b), "\n")
	return v != "" && v[0] != '-' && !strings.ContainsFunc(v, func(r rune) bool { return r <= ' ' || r == 0x7f })
}

// treeSum digests what is below the directory at path (id), to depth
// maxIncludeDepth: every entry's name and what it is.
func treeSum(path string, id ident, depth int, budget *int) (uint64, error) {
	if depth > maxIncludeDepth {
		return 0, fmt.Errorf("%w: %s is too deep", errOdd, path)
	}
	ents, _, err := listDir(path, *budget)
	if err != nil {
		return 0, err
	}
	if *budget -= len(ents); *budget < 0 {
		return 0, fmt.Errorf("%w: too many entries below %s", errOdd, path)
	}
	if err := statEach(path, id, ents); err != nil {
		return 0, err
	}
	sum := listingSum(ents)
	for _, en := range ents {
		if en.id.isDir() {
			s, err := treeSum(filepath.Join(path, en.name), en.id, depth+1, budget)
			if err != nil {
				return 0, err
			}
			sum ^= s*31 + uint64(len(en.name))
		}
	}
	return sum, nil
}

// strayVerdicts are the entries of e that prev, the trusted version of the
// same git directory (the zero element if none), did not hold as they are
// now: each is moved aside by itself.
func (g *Guard) strayVerdicts(e, prev element) []verdict {
	had := map[string]ident{}
	for _, en := range prev.entries {
		had[en.name] = en.id
	}
	var out []verdict
	for _, en := range e.entries {
		if id, ok := had[en.name]; ok && id == en.id {
			continue
		}
		p := filepath.Join(e.path, en.name)
		why := "it is " + quoteCapped(en.name) + " in the git directory " + g.show(e.path) +
			", an entry git does not keep there, which git's scripts and other tools may read or run (git instaweb runs gitweb/ there) outside the sandbox"
		if en.name == "BISECT_START" {
			why = "its " + g.show(p) + " holds no plain branch name or commit: the user's own git bisect reset checks out what it holds (\"-f\" would throw their changes away)"
		}
		out = append(out, verdict{why: why, el: element{role: roleStray, path: p}})
	}
	return out
}

// maxAlternatesBytes caps an alternates file: a path a line.
const maxAlternatesBytes = 64 << 10

// alternatesFile reads a common dir's objects/info/alternates, where git
// finds other object stores to read as the repository's own: a path a
// line, relative to the objects directory. Git reads each store's own
// info/alternates in turn, to depth 5, and resolves every path each time
// it runs: the element's identity is the whole chain as it resolves now
// (each store's place and what is there, each nested file's content), so
// that a store swapped for a symlink, or a nested file written in a store
// in the workspace, has it judged again.
func (r *resolver) alternatesFile(path string) element {
	e := element{role: roleAlternates, path: path}
	id, err := lstatIdent(path)
	switch {
	case err != nil:
		e.odd = err.Error()
		return e
	case !id.exists() || id.isLink():
		return e // a link in a git directory is removed as such (links.go)
	}
	b, _, err := readRegular(path, maxAlternatesBytes)
	if err != nil {
		e.id = id
		e.odd = err.Error()
		return e
	}
	e.content = b
	var chain bytes.Buffer
	chain.Write(b)
	walkAlternates(filepath.Dir(filepath.Dir(path)), b, 0, r.follow, func(s altStore) {
		fmt.Fprintf(&chain, "\x00%s\x00%s\x00%v\x00%s", s.line, s.path, s.id, s.nested)
	})
	e.id = ident{Kind: id.Kind, Sum: contentSum(chain.Bytes())}
	return e
}

// maxAlternatesDepth is git's own (object-file.c, link_alt_odb_entry).
const maxAlternatesDepth = 5

// altStore is one object store an alternates chain names.
type altStore struct {
	line   string // as written
	path   string // resolved, or "" with odd set
	odd    string // why it cannot be followed, or ""
	id     ident  // what is there now
	nested []byte // its own info/alternates, if any
}

// walkAlternates calls visit with each store the alternates content of
// the objects directory objects names, then with those their own
// info/alternates name, as git reads them: every line but empty ones and
// comments, relative ones from the directory whose file names them.
// follow says whether a store's own info/alternates is read: only in the
// roots and the read-only grants (nil: nowhere). Past a store outside
// them the chain is already a risk, and nothing there is looked at.
func walkAlternates(objects string, content []byte, depth int, follow func(string) bool, visit func(altStore)) {
	walkAlternatesOnce(objects, content, depth, follow, visit, map[string]bool{}, new(int))
}

// maxAlternateStores bounds the stores an alternates chain names, each
// once (git links a store once): past it, one more that cannot be
// followed.
const maxAlternateStores = 256

func walkAlternatesOnce(objects string, content []byte, depth int, follow func(string) bool, visit func(altStore), seen map[string]bool, n *int) {
	// Git reads the files at depths 0 to 5 (object-file.c,
	// link_alt_odb_entries).
	if depth > maxAlternatesDepth {
		return
	}
	for _, line := range strings.Split(string(content), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		s := altStore{line: line}
		if *n++; *n > maxAlternateStores {
			visit(altStore{line: line, odd: "more object stores than git would link"})
			return
		}
		switch {
		case line[0] == '"' || strings.ContainsRune(line, 0):
			s.odd = "a quoted path, which git unquotes"
		default:
			p, err := canonical(under(objects, line))
			if err != nil {
				s.odd = err.Error()
				break
			}
			s.path = p
			s.id, _ = lstatIdent(p)
			if s.id.isDir() && follow != nil && follow(p) {
				if b, _, err := readRegular(filepath.Join(p, "info", "alternates"), maxAlternatesBytes); err == nil {
					s.nested = b
				}
			}
		}
		if s.path != "" && seen[s.path] {
			continue // linked already
		}
		if s.path != "" {
			seen[s.path] = true
		}
		visit(s)
		if s.nested != nil {
			walkAlternatesOnce(s.path, s.nested, depth+1, follow, visit, seen, n)
		}
	}
}

// judgeAlternates says why an alternates file would let the user's git
// read, as this repository's, objects the sandbox does not show commands,
// or "": each object store of its chain must lie in the writable roots or
// a path the user granted read-only. A line git would unquote, which this
// does not read, is a risk. What lies outside is never looked at but for
// whether it is there, so the note is the same whatever is there.
func (g *Guard) judgeAlternates(e element) string {
	why := ""
	walkAlternates(filepath.Dir(filepath.Dir(e.path)), e.content, 0, g.res.follow, func(s altStore) {
		switch {
		case why != "":
		case s.odd != "":
			why = "it names an object store that cannot be followed safely: " + quoteCapped(s.line)
		default:
			if kind, _, _ := g.place(s.path); kind == outside && !g.readable(s.path) {
				why = "it names (or an object store it names names) an object store outside the writable roots and the paths granted read-only, " + quoteCapped(s.line) +
					": the user's own git would read that repository's objects as this one's, and copy them in (git fsck --lost-found, git repack)"
			}
		}
	})
	return why
}
