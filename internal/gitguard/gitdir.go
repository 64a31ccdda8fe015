package gitguard

import (
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
	"rebased-patches": true, "gc.pid": true, "gc.log": true, "fsmonitor--daemon.ipc": true,
	"ORIG_HEAD": true, "FETCH_HEAD": true, "MERGE_HEAD": true, "MERGE_MSG": true, "MERGE_MODE": true,
	"MERGE_RR": true, "MERGE_AUTOSTASH": true, "AUTO_MERGE": true, "CHERRY_PICK_HEAD": true,
	"REVERT_HEAD": true, "REBASE_HEAD": true, "BISECT_LOG": true, "BISECT_NAMES": true,
	"BISECT_START": true, "BISECT_TERMS": true, "BISECT_EXPECTED_REV": true,
	"BISECT_ANCESTORS_OK": true, "BISECT_RUN": true, "BISECT_HEAD": true, "BISECT_FIRST_PARENT": true,
	"COMMIT_EDITMSG": true, "TAG_EDITMSG": true, "NOTES_EDITMSG": true, "EDIT_DESCRIPTION": true,
	"SQUASH_MSG": true, "ADD_EDIT.patch": true, "REPLACE_EDITOBJ": true,
	"GITGUI_MSG": true, "GITGUI_BCK": true, "GITGUI_EDITMSG": true, "gitk.cache": true,
	"lfs": true, "annex": true, "filter-repo": true,
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
	ents, err := r.gitdirEntries(gitdir, func(name string) bool { return !gitKeeps(name) })
	if err != nil {
		e.odd = err.Error()
		return e
	}
	e.id = ident{Kind: id.Kind, Dev: id.Dev, Ino: id.Ino}
	if len(ents) == 0 {
		return e
	}
	// What is in a stray directory counts too: git instaweb keeps its
	// config, and runs the user's, from gitweb/.
	budget := maxStrayEntries
	for i := range ents {
		if ents[i].id.isDir() {
			sum, err := treeSum(filepath.Join(gitdir, ents[i].name), ents[i].id, 0, &budget)
			if err != nil {
				e.odd = err.Error()
				return e
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
// directory: more is odd, and judged unread.
const maxStrayEntries = 10_000

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
		out = append(out, verdict{
			why: "it is " + quoteCapped(en.name) + " in the git directory " + g.show(e.path) +
				", an entry git does not keep there, which git's scripts and other tools may read or run (git instaweb runs gitweb/ there) outside the sandbox",
			el: element{role: roleStray, path: p},
		})
	}
	return out
}

// maxAlternatesBytes caps an alternates file: a path a line.
const maxAlternatesBytes = 64 << 10

// alternatesFile reads a common dir's objects/info/alternates, where git
// finds other object stores to read as the repository's own: a path a
// line, relative to the objects directory. Its identity is its content.
func alternatesFile(path string) element {
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
	e.id = ident{Kind: id.Kind, Sum: contentSum(b)}
	e.content = b
	return e
}

// judgeAlternates says why an alternates file would let the user's git
// read, as this repository's, objects the sandbox does not show commands,
// or "": each object store it names must lie in the writable roots or a
// path the user granted read-only. Git reads every line but empty ones
// and comments as a path (object-file.c, link_alt_odb_entries), a quoted
// one C-unquoted, which this does not read: a risk. What lies outside is
// never looked at, so the note is the same whatever is there.
func (g *Guard) judgeAlternates(e element) string {
	objects := filepath.Dir(filepath.Dir(e.path))
	for _, line := range strings.Split(string(e.content), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		if line[0] == '"' || strings.ContainsRune(line, 0) {
			return "it names an object store git would unquote: " + quoteCapped(line)
		}
		p, err := canonical(under(objects, line))
		if err != nil {
			return "it names an object store that cannot be followed safely: " + quoteCapped(line)
		}
		if kind, _, _ := g.place(p); kind == outside && !g.readable(p) {
			return "it names an object store outside the writable roots and the paths granted read-only, " + quoteCapped(line) +
				": the user's own git would read that repository's objects as this one's, and copy them in (git fsck --lost-found, git repack)"
		}
	}
	return ""
}
