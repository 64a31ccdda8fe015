package gitguard

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
)

// What a call leaves in a trusted repository that runs nothing but changes
// what the user's git shows them: replace refs (git log, show and diff
// show the object a replace ref names in place of the commit it replaces),
// grafts and a shallow file (parents of the command's choosing, or none),
// and rerere's recorded resolutions (applied, unasked, to the user's next
// conflicting merge). A repository made in a call is the command's anyway:
// these are judged in trusted ones only.

// maxPackedRefsBytes caps the packed-refs the guard reads for replace refs:
// a repository of a hundred thousand tags stays below it.
const maxPackedRefsBytes = 64 << 20

// cachedPacked is the replace refs of a packed-refs file, and the file's
// state when it was read.
type cachedPacked struct {
	id    ident
	lines []string
}

// replaceRefs reads the replace refs of the common dir common, as
// "refs/replace/ID VALUE" lines, sorted: loose ones (refs/replace/ID as a
// file; git takes no other name below refs/replace for a replacement)
// over packed ones. The element is refs/replace, its
// identity those lines, so that packed-refs rewritten with the same
// replace refs (git pack-refs, git gc) is no change. A packed-refs file is
// read again only when it changed. A symlink there is removed as such
// (links.go).
func (r *resolver) replaceRefs(common string) element {
	dir := filepath.Join(common, "refs", "replace")
	e := element{role: roleReplace, path: dir}
	refs := map[string]string{}
	var kind uint32
	packed := filepath.Join(common, "packed-refs")
	if pid, err := lstatIdent(packed); err == nil && pid.isReg() {
		c, ok := r.packed[packed]
		if !ok || c.id != pid {
			b, id, err := readRegular(packed, maxPackedRefsBytes)
			if err != nil {
				// Not the element's oddity: the user's packed-refs is
				// not theirs to lose for it, nor refs/replace.
				c = cachedPacked{id: pid}
			} else {
				c = cachedPacked{id: id, lines: packedReplaceRefs(b)}
			}
			if r.packed != nil {
				r.packed[packed] = c
			}
		}
		if r.packed != nil {
			r.used[packed] = true
		}
		for _, l := range c.lines {
			name, value, _ := strings.Cut(l, " ")
			refs[name] = value
			kind = pid.Kind
		}
	}
	id, err := lstatIdent(dir)
	switch {
	case err != nil:
		e.odd = err.Error()
		return e
	case id.isDir():
		ents, _, err := listDir(dir, maxHooks)
		if err != nil {
			e.id, e.odd = id, err.Error()
			return e
		}
		for _, en := range ents {
			if !en.id.isReg() || !isHexID(en.name) {
				continue // git replaces nothing by another name (it warns)
			}
			b, fid, err := readRegular(filepath.Join(dir, en.name), 1024)
			if err != nil {
				continue // gone, or not a ref git reads either
			}
			refs["refs/replace/"+en.name] = strings.TrimSpace(string(b))
			kind = fid.Kind
		}
	}
	if len(refs) == 0 {
		return e
	}
	lines := make([]string, 0, len(refs))
	for n, v := range refs {
		lines = append(lines, n+" "+v)
	}
	sort.Strings(lines)
	e.content = []byte(strings.Join(lines, "\n"))
	e.id = ident{Kind: kind, Sum: contentSum(e.content)}
	return e
}

// packedReplaceRefs returns the replace refs of a packed-refs file's
// content, as "NAME VALUE" lines: "VALUE NAME" records, peeled ("^") lines
// and the header skipped.
func packedReplaceRefs(b []byte) []string {
	if !bytes.Contains(b, []byte(" refs/replace/")) {
		return nil
	}
	var out []string
	for _, l := range bytes.Split(b, []byte{'\n'}) {
		v, name, ok := bytes.Cut(bytes.TrimSuffix(l, []byte{'\r'}), []byte{' '})
		if ok && bytes.HasPrefix(name, []byte("refs/replace/")) && isHexID(string(name[len("refs/replace/"):])) && len(v) > 0 && v[0] != '#' && v[0] != '^' {
			out = append(out, string(name)+" "+string(v))
		}
	}
	return out
}

// replaceRefMap reads an element's lines back.
func replaceRefMap(e element) map[string]string {
	m := map[string]string{}
	if len(e.content) == 0 {
		return m
	}
	for _, l := range strings.Split(string(e.content), "\n") {
		n, v, _ := strings.Cut(l, " ")
		m[n] = v
	}
	return m
}

// replaceUndo returns the replace refs made or moved since prev, the
// trusted version, and the git update-ref --stdin lines that undo it:
// each made one deleted, each moved one set back to what it named (a
// symbolic one, which update-ref cannot write back, deleted). One the
// call deleted stays deleted: without it git shows the commit itself.
func replaceUndo(e, prev element) (names, lines []string) {
	was := replaceRefMap(prev)
	now := replaceRefMap(e)
	for _, n := range sortedStrings(now) {
		old, had := was[n]
		if had && old == now[n] {
			continue
		}
		names = append(names, n)
		if had && isHexID(old) {
			lines = append(lines, "update "+n+" "+old)
		} else {
			lines = append(lines, "delete "+n)
		}
	}
	return names, lines
}

func sortedStrings(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// isHexID reports whether s is an object id as git writes one: 40 or 64
// lowercase hex digits.
func isHexID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	return strings.Trim(s, "0123456789abcdef") == ""
}

// undoReplace runs git update-ref with lines in the common dir common, as
// rebuildIndex runs git: nothing of the user's but the repository's own
// config (judged by now, and trusted), no hook (update-ref runs
// reference-transaction), no transport. Refs are named, never
// dereferenced: a symbolic replace ref goes itself, not what it names.
func (g *Guard) undoReplace(common string, lines []string) error {
	if g.cfg.Git == "" {
		return errors.New("no git on this machine")
	}
	for _, l := range lines {
		if strings.ContainsAny(l, "\x00\n") {
			return fmt.Errorf("a ref name git cannot be given: %q", l)
		}
	}
	env := []string{
		"PATH=/usr/bin:/bin", "HOME=/nonexistent", "LC_ALL=C",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_NO_REPLACE_OBJECTS=1",
		"GIT_DIR=" + common,
	}
	_, err := runGit(g.cfg.Git, "update-ref", common, env, strings.NewReader(strings.Join(lines, "\n")+"\n"), io.Discard,
		"-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "update-ref", "--no-deref", "--stdin")
	return err
}

// historyFile reads info/grafts or shallow: what is there, by identity
// (every write moves it). Git reads both as they are, through a symlink
// too (removed as such, links.go).
func historyFile(path string) element {
	e := element{role: roleHistory, path: path}
	id, err := lstatIdent(path)
	if err != nil {
		e.odd = err.Error()
		return e
	}
	if !id.isLink() {
		e.id = id
	}
	return e
}

// historyRisk says what a history file made or changed since prev, the
// trusted version, would do to the user's git, or "". A shallow file is
// a risk only where there was none: git fetch --depth and --deepen in a
// shallow clone rewrite theirs.
func (g *Guard) historyRisk(e, prev element) string {
	if !e.id.exists() || e.id == prev.id {
		return ""
	}
	if filepath.Base(e.path) == "shallow" {
		if prev.id.exists() {
			return ""
		}
		return "its shallow file " + g.show(e.path) + " was made by a call in a repository that had none: the user's own git log, blame and describe would stop at the commits it names, as if they had no parents, hiding their history (a call's git fetch --depth makes one too)"
	}
	return "its grafts file " + g.show(e.path) + " was made or changed by a call: the user's own git log, blame and merge would give commits the parents it names, a history the command chose"
}

// rrCache reads rr-cache: the directories named by a conflict's id (the
// only names rerere looks up) and every entry in each (preimage,
// postimage...), with what each is. Absent, it costs one lstat.
func rrCache(path string) element {
	e := element{role: roleRRCache, path: path}
	id, err := lstatIdent(path)
	switch {
	case err != nil:
		e.odd = err.Error()
		return e
	case !id.exists() || id.isLink():
		return e
	case !id.isDir():
		e.id = id
		return e
	}
	ents, did, err := listDir(path, maxStateEntries)
	if err == nil {
		err = statEach(path, did, ents)
	}
	if err != nil {
		e.id, e.odd = id, err.Error()
		return e
	}
	var all []dirEntry
	for _, en := range ents {
		if !isHexID(en.name) {
			continue // never looked up; what the guard moved aside, too
		}
		all = append(all, en)
		if !en.id.isDir() {
			continue
		}
		sub := filepath.Join(path, en.name)
		in, sid, err := listDir(sub, maxHooks)
		if err == nil {
			err = statEach(sub, sid, in)
		}
		if err != nil {
			e.id, e.odd = id, err.Error()
			return e
		}
		for _, f := range in {
			all = append(all, dirEntry{name: en.name + "/" + f.name, id: f.id})
		}
	}
	e.id = ident{Kind: id.Kind, Sum: listingSum(all)}
	e.entries = all
	return e
}

// rrCacheMade returns the resolutions (rr-cache/ID directories) in which
// anything is new or changed since prev, the trusted version, and that
// hold a postimage (or a variant's, postimage.N): rerere would merge it
// into the user's next merge with that conflict. A preimage alone, which
// a call's honest merge with rerere on records, resolves nothing: the
// user's own resolution of that conflict is what rerere then records.
// Nil if none.
func rrCacheMade(e, prev element) []string {
	had := map[string]ident{}
	for _, en := range prev.entries {
		had[en.name] = en.id
	}
	changed, resolves := map[string]bool{}, map[string]bool{}
	var tops []string
	for _, en := range e.entries {
		top, f, _ := strings.Cut(en.name, "/")
		if strings.HasPrefix(f, "postimage") {
			resolves[top] = true
		}
		if id, ok := had[en.name]; ok && id == en.id {
			continue
		}
		if !changed[top] {
			changed[top] = true
			tops = append(tops, top)
		}
	}
	var out []string
	for _, t := range tops {
		if resolves[t] {
			out = append(out, t)
		}
	}
	return out
}

// historyVerdicts judges replace refs, a history file or rr-cache of a
// trusted repository against prev, its trusted version.
func (g *Guard) historyVerdicts(e, prev element) []verdict {
	switch e.role {
	case roleReplace:
		names, lines := replaceUndo(e, prev)
		if len(names) == 0 {
			return nil
		}
		quoted := make([]string, len(names))
		for i, n := range names {
			quoted[i] = quoteCapped(n)
		}
		if len(quoted) > 5 {
			quoted = append(quoted[:5], fmt.Sprintf("%d more", len(names)-5))
		}
		why := "the replace refs " + strings.Join(quoted, ", ") + " were made or moved by a call: the user's own git log, show, diff and blame would show the objects the command chose in place of the commits they name"
		return []verdict{{why: why, el: e, undo: lines}}
	case roleHistory:
		if why := g.historyRisk(e, prev); why != "" {
			return []verdict{{why: why, el: e}}
		}
	case roleRRCache:
		if !e.id.exists() {
			return nil
		}
		why := " holds resolutions a call recorded or changed: the user's own git merge, rebase, cherry-pick or am would apply them to the conflicts they name without asking (with rerere.enabled, or once rr-cache exists), the command's text in place of the user's choice; the conflicts of a merge made in a call are not remembered by rerere"
		if !e.id.isDir() {
			return []verdict{{why: "its rerere cache " + g.show(e.path) + why, el: e}}
		}
		made := rrCacheMade(e, prev)
		if len(made) > 0 && !prev.id.exists() {
			return []verdict{{why: "its rerere cache " + g.show(e.path) + why, el: e}}
		}
		var out []verdict
		for _, name := range made {
			p := filepath.Join(e.path, name)
			out = append(out, verdict{why: "its rerere resolution " + g.show(p) + why, el: element{role: roleRRCache, path: p}})
		}
		return out
	}
	return nil
}
