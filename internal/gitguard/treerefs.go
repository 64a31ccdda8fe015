package gitguard

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Some layouts of the user's own put what git runs in the work tree: a
// tracked core.hooksPath (husky's .husky, a .githooks), a tracked file a
// config includes, a git directory there (dotfiles kept with
// --separate-git-dir=.meta). In a call those paths are read-only, but a
// command can still commit, or stage, content there without touching the
// work tree (git update-index --cacheinfo, commit-tree, stash store): the
// user's own checkout of the agent's branch, git checkout -- ., git reset
// --hard or git stash pop writes it later, and git runs it.
//
// So for a trusted repository with such paths the guard takes, at the
// start of a call, every ref (git show-ref --head), the stash's entries
// and the index's entries below those paths; and at the end git decides
// whether any commit a moved or new ref reaches, and no ref reached
// before, changes those paths (git rev-list --full-history NEW --not OLD
// -- PATHS). Such a ref is put back where it was (a new one removed), its
// tip kept as refs/nanosandbox-quarantine/..., a stash entry dropped as git
// stash drop drops it, and changed index entries below the paths are put
// back. Replace refs and grafts are off for that git: they would show it
// other commits. What git is asked costs a repository with no such layout
// nothing, and one with it a few runs of git per call.

// quarantineRefs is where a put-back ref's tip is kept for the user.
const quarantineRefs = "refs/nanosandbox-quarantine/"

// maxRefChecks is how many moved refs and stash entries are asked about
// one by one; past it, all are put back.
const maxRefChecks = 32

// treeBudget bounds the end of a call's checks of all tree layouts.
const treeBudget = 20 * time.Second

// treeSnap is what a call's start saw of one repository with tree paths.
type treeSnap struct {
	cand          candidate
	gitdir, tree  string
	paths         []string          // below tree, where a checkout writes what git runs
	refs          map[string]string // name (and HEAD) -> object id
	headRef       string            // what HEAD names, or "" when detached
	stash         []string          // the stash's entries, newest first
	index         []byte            // git ls-files -s -z -- paths
	indexID       ident
	zero          string // the null object id of its hash
	failedAtBegin bool
	// files are the files git read for it, as they were just before it
	// read them (refFilesOf); nil when they cannot vouch for it.
	files map[string]ident
}

// maxRefFiles bounds the files refFilesOf looks at: a repository with
// more loose refs than that is asked by git at every call.
const maxRefFiles = 4096

// refFilesOf is what git reads to list gitdir's refs, HEAD, ORIG_HEAD,
// the stash's entries and the index's: the identity of each of its files
// (every entry below refs/ and reftable/ too, and the shared parts of a
// split index), or nil when that cannot say the listings are as they
// were: a linked worktree's (its refs are in the common directory), a
// symbolic link among them, too many, or one changed within the last
// second (a file changed twice within one tick of a coarse clock keeps
// its times). Git writes each anew, or in place, always moving its ctime,
// which no command can set back: the same identities mean the same
// listings, with no run of git. The guard's own stand-ins (a commondir,
// an empty config.worktree), as it made them, count as none.
func (g *Guard) refFilesOf(gitdir string) map[string]ident {
	out := map[string]ident{}
	racy := time.Now().Add(-time.Second).UnixNano()
	add := func(rel string) bool {
		p := filepath.Join(gitdir, rel)
		id, err := lstatIdent(p)
		if id.exists() && g.ph.pristine(p, id) {
			id = ident{} // the guard's stand-in (an empty config.worktree): none to git
		}
		if err != nil || id.isLink() || id.exists() && id.Ctime >= racy || len(out) >= maxRefFiles {
			return false
		}
		out[rel] = id
		return true
	}
	common := filepath.Join(gitdir, "commondir")
	if id, err := lstatIdent(common); err != nil || id.exists() && !g.ph.pristine(common, id) {
		return nil // a linked worktree's: its refs are the common directory's
	}
	names, err := readNames(gitdir)
	if err != nil {
		return nil
	}
	for _, n := range names {
		if strings.HasPrefix(n, "sharedindex.") && !add(n) {
			return nil
		}
	}
	for _, rel := range []string{"HEAD", "ORIG_HEAD", "packed-refs", "index", "config", "config.worktree", "logs/refs/stash"} {
		if !add(rel) {
			return nil
		}
	}
	var walk func(rel string) bool
	walk = func(rel string) bool {
		if !add(rel) {
			return false
		}
		if !out[rel].isDir() {
			return true
		}
		names, err := readNames(filepath.Join(gitdir, rel))
		if err != nil {
			return false
		}
		for _, n := range names {
			if !walk(rel + "/" + n) {
				return false
			}
		}
		return true
	}
	if !walk("refs") || !walk("reftable") {
		return nil
	}
	return out
}

// treePaths returns the work tree of cand and the paths in it (relative,
// never below a .git) of what git runs there: its core.hooksPath, its
// included config files, its git directory or common dir when they lie
// in the work tree.
func treePaths(cand candidate, els []element) (string, []string) {
	if cand.bare {
		return "", nil
	}
	tree := filepath.Dir(cand.entry)
	var paths []string
	for _, e := range els {
		switch e.role {
		case roleHooksPath, roleConfig, roleGitdir, roleCommondir, roleHooks:
		default:
			continue
		}
		if e.path == "" || !e.id.exists() {
			continue
		}
		rel, err := filepath.Rel(tree, e.path)
		if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
			continue
		}
		if slices.ContainsFunc(strings.Split(rel, "/"), func(c string) bool { return strings.EqualFold(c, ".git") }) {
			continue // git writes no path with a .git component
		}
		if !slices.Contains(paths, rel) {
			paths = append(paths, rel)
		}
	}
	slices.Sort(paths)
	return tree, paths
}

// treeGit runs the host's git in a trusted repository, reading nothing
// of the user's but the repository itself, and no hook, fsmonitor,
// replace ref or graft.
func (g *Guard) treeGit(s *treeSnap, stdin io.Reader, args ...string) ([]byte, error) {
	env := []string{
		"PATH=/usr/bin:/bin", "HOME=/nonexistent", "LC_ALL=C",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_NO_REPLACE_OBJECTS=1", "GIT_GRAFT_FILE=/nonexistent", "GIT_LITERAL_PATHSPECS=1",
		"GIT_DIR=" + s.gitdir, "GIT_WORK_TREE=" + s.tree,
	}
	var out bytes.Buffer
	lim := &limitedBuffer{buf: &out, max: maxListingBytes}
	_, err := runGit(g.cfg.Git, args[0], s.tree, env, stdin, lim,
		append([]string{"-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "core.quotepath=false"}, args...)...)
	if err == nil && out.Len() >= maxListingBytes {
		err = fmt.Errorf("git %s: more than %d bytes", args[0], maxListingBytes)
	}
	return out.Bytes(), err
}

// takeRefs reads every ref, HEAD, what HEAD names and the stash's entries.
func (g *Guard) takeRefs(s *treeSnap) error {
	out, err := g.treeGit(s, nil, "show-ref", "--head")
	if err != nil && len(out) > 0 {
		return err
	}
	s.refs = map[string]string{} // show-ref fails, saying nothing, where there is no ref
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if id, name, ok := strings.Cut(line, " "); ok {
			s.refs[name] = id
			if s.zero == "" {
				s.zero = strings.Repeat("0", len(id))
			}
		}
	}
	// ORIG_HEAD, which git reset --hard ORIG_HEAD, the undo of a merge or
	// rebase, checks out: show-ref lists no pseudo-ref. Read from its
	// file, an object id alone, as git writes it.
	if b, _, err := readRegular(filepath.Join(s.gitdir, "ORIG_HEAD"), maxGitfileBytes); err == nil {
		if id := strings.TrimSpace(string(b)); isHex(id) && (len(id) == 40 || len(id) == 64) {
			s.refs["ORIG_HEAD"] = id
		}
	}
	// What HEAD names, read from the file (git's own format, "ref: " and
	// the name; anything else is an object id, a detached HEAD): a run
	// of git less at either end of each call.
	s.headRef = ""
	if b, _, err := readRegular(filepath.Join(s.gitdir, "HEAD"), maxGitfileBytes); err == nil {
		if name, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "ref: "); ok {
			s.headRef = name
		}
	}
	s.stash = nil
	if _, ok := s.refs["refs/stash"]; ok {
		b, err := g.treeGit(s, nil, "reflog", "show", "--format=%H", "refs/stash", "--")
		if err != nil {
			return err
		}
		s.stash = strings.Fields(string(b))
	}
	return nil
}

// takeIndex reads the index's entries below the paths, and what the
// index file is: git writes it anew (a new inode) at every change, so one
// that is as it was need not be read again.
func (g *Guard) takeIndex(s *treeSnap) ([]byte, error) {
	s.indexID, _ = lstatIdent(filepath.Join(s.gitdir, "index"))
	return g.treeGit(s, nil, append([]string{"ls-files", "-s", "-z", "--"}, s.paths...)...)
}

// sameFile reports whether a and b are the same file, unchanged.
func sameFile(a, b ident) bool {
	return a.exists() && a.Kind == b.Kind && a.Dev == b.Dev && a.Ino == b.Ino && a.Size == b.Size && a.Mtime == b.Mtime && a.Ctime == b.Ctime
}

// snapTrees takes, at the start of a call, what the end compares with.
func (g *Guard) snapTrees(cur map[candidate][]element) []*treeSnap {
	if g.cfg.Git == "" {
		return nil
	}
	var out []*treeSnap
	for _, c := range sortedKeys(cur) {
		if g.trusted[c] == nil {
			continue
		}
		tree, paths := treePaths(c, cur[c])
		if len(paths) == 0 {
			continue
		}
		gitdir := ""
		for _, e := range cur[c] {
			if e.role == roleGitdir {
				gitdir = e.path
			}
		}
		if gitdir == "" {
			continue
		}
		files := g.refFilesOf(gitdir) // before git reads them
		if was := g.treeSnaps[c]; files != nil && was != nil && was.gitdir == gitdir && was.tree == tree &&
			slices.Equal(was.paths, paths) && maps.Equal(was.files, files) {
			s := *was // what git said when they were as they are
			out = append(out, &s)
			continue
		}
		s := &treeSnap{cand: c, gitdir: gitdir, tree: tree, paths: paths}
		var err error
		if err = g.takeRefs(s); err == nil {
			s.index, err = g.takeIndex(s)
		}
		if err != nil {
			g.logf("git guard: reading the refs of %s: %v", gitdir, err)
			s.failedAtBegin = true
		}
		delete(g.treeSnaps, c)
		if err == nil && files != nil {
			s.files = files
			if g.treeSnaps == nil {
				g.treeSnaps = map[candidate]*treeSnap{}
			}
			g.treeSnaps[c] = s
		}
		out = append(out, s)
	}
	return out
}

// checkTrees is the end of a call's check of what it began with; it
// returns the notes.
func (g *Guard) checkTrees(snaps []*treeSnap) []string {
	var notes []string
	began := time.Now()
	for _, old := range snaps {
		if _, ok := g.trusted[old.cand]; !ok {
			continue // moved aside, or no longer there
		}
		if id, err := lstatIdent(old.gitdir); err != nil || !id.isDir() {
			continue
		}
		where := strings.Join(old.paths, ", ")
		if old.failedAtBegin || time.Since(began) > treeBudget {
			notes = append(notes, fmt.Sprintf("git: the sandbox could not check whether this call's commits in %s change %s, where the user's git runs what a checkout writes: tell the user to review what the call committed or staged there before checking any of it out", old.tree, where))
			continue
		}
		if old.files != nil && maps.Equal(g.refFilesOf(old.gitdir), old.files) {
			continue // nothing git reads for the refs, the stash or the index changed
		}
		cur := &treeSnap{cand: old.cand, gitdir: old.gitdir, tree: old.tree, paths: old.paths}
		if err := g.takeRefs(cur); err != nil {
			notes = append(notes, fmt.Sprintf("git: the sandbox could not read the refs of %s after this call (%v): tell the user to review what the call committed before checking it out, %s may hold what git runs", old.tree, err, where))
			continue
		}
		notes = append(notes, g.putRefsBack(old, cur)...)
		notes = append(notes, g.putIndexBack(old, cur)...)
	}
	return notes
}

// reaches reports whether a commit reachable from tip, and from no ref the
// call began with, changes the paths.
func (g *Guard) reaches(old *treeSnap, tips ...string) (bool, error) {
	var in strings.Builder
	for _, t := range tips {
		in.WriteString(t + "\n")
	}
	for _, id := range old.refs {
		in.WriteString("^" + id + "\n")
	}
	for _, id := range old.stash {
		in.WriteString("^" + id + "\n")
	}
	out, err := g.treeGit(old, strings.NewReader(in.String()),
		append([]string{"rev-list", "-n", "1", "--full-history", "--stdin", "--"}, old.paths...)...)
	if err != nil {
		return true, err
	}
	return len(bytes.TrimSpace(out)) > 0, nil
}

// putRefsBack undoes every ref and stash entry of the call that reaches a
// change of the paths.
func (g *Guard) putRefsBack(old, cur *treeSnap) []string {
	where := strings.Join(old.paths, ", ")
	var moved []string
	for name, id := range cur.refs {
		if strings.HasPrefix(name, quarantineRefs) || name == "refs/stash" {
			continue
		}
		if name == "HEAD" && cur.headRef != "" && cur.headRef == old.headRef {
			continue // the branch it names is what moved
		}
		if old.refs[name] != id {
			moved = append(moved, name)
		}
	}
	var newStash []string
	for _, id := range cur.stash {
		if !slices.Contains(old.stash, id) {
			newStash = append(newStash, id)
		}
	}
	if len(moved) == 0 && len(newStash) == 0 {
		return nil
	}
	var tips []string
	for _, n := range moved {
		tips = append(tips, cur.refs[n])
	}
	if bad, err := g.reaches(old, append(tips, newStash...)...); err != nil {
		g.logf("git guard: %s: %v", old.gitdir, err)
	} else if !bad {
		return nil // what the call committed leaves the paths as they were
	}
	// Each is asked about alone, unless there are many (a command that
	// makes thousands of refs must not cost thousands of runs of git):
	// then all of them are put back.
	many := len(moved)+len(newStash) > maxRefChecks
	isBad := func(id string) bool {
		if many {
			return true
		}
		bad, err := g.reaches(old, id)
		return err != nil || bad
	}
	var notes, back []string
	headBad := false
	var tx strings.Builder // one transaction of git update-ref --stdin
	slices.Sort(moved)
	for _, name := range moved {
		id := cur.refs[name]
		if !isBad(id) {
			continue
		}
		if name == "HEAD" {
			headBad = true
			continue
		}
		fmt.Fprintf(&tx, "update %s%s %s\n", quarantineRefs, strings.TrimPrefix(name, "refs/"), id)
		if was, ok := old.refs[name]; ok {
			fmt.Fprintf(&tx, "update %s %s %s\n", name, was, id)
		} else {
			fmt.Fprintf(&tx, "delete %s %s\n", name, id)
		}
		back = append(back, name)
	}
	if len(back) > 0 {
		shown := back
		if len(shown) > 5 {
			shown = append(shown[:5:5], fmt.Sprintf("%d more", len(back)-5))
		}
		if _, err := g.treeGit(old, strings.NewReader(tx.String()), "update-ref", "-m", "nanosandbox-mcp: put back", "--stdin"); err != nil {
			notes = append(notes, fmt.Sprintf("git: %s in %s reach a commit of this call that changes %s, where the user's git runs what a checkout writes, and the sandbox could not put them back (%v): tell the user not to check them out, merge or reset to them", strings.Join(shown, ", "), old.tree, where, err))
		} else {
			notes = append(notes, fmt.Sprintf("git: %s in %s reached a commit of this call that changes %s, where the user's git runs what a checkout writes, so the sandbox put them back where they were (those the call made, removed); their tips are kept below %s: tell the user to review them there, outside the sandbox, before checking any of it out", strings.Join(shown, ", "), old.tree, where, quarantineRefs))
		}
	}
	// HEAD after the branches: put back on what it named.
	if headBad {
		if note := g.putHeadBack(old, cur); note != "" {
			notes = append(notes, note)
		}
	}
	// Stash entries, the oldest first (dropping one renumbers only those
	// older), dropped as git stash drop does.
	dropped := false
	defer func() {
		if dropped {
			// No entry left: no stash (git resolves refs/stash@{0} of an
			// empty reflog to the ref, which git stash pop would apply).
			if b, err := g.treeGit(old, nil, "reflog", "show", "--format=%H", "refs/stash", "--"); err == nil && len(bytes.TrimSpace(b)) == 0 {
				g.treeGit(old, nil, "update-ref", "-d", "refs/stash")
			}
		}
	}()
	var drop []string
	tx.Reset()
	for i := len(cur.stash) - 1; i >= 0; i-- {
		id := cur.stash[i]
		if slices.Contains(old.stash, id) || !isBad(id) {
			continue
		}
		fmt.Fprintf(&tx, "update %sstash/%s %s\n", quarantineRefs, id, id)
		drop = append(drop, fmt.Sprintf("refs/stash@{%d}", i))
	}
	if len(drop) == 0 {
		return notes
	}
	g.treeGit(old, strings.NewReader(tx.String()), "update-ref", "--stdin")
	// Git drops them in the order given: each renumbers only those older.
	if _, err := g.treeGit(old, nil, append([]string{"reflog", "delete", "--updateref", "--rewrite"}, drop...)...); err != nil {
		return append(notes, fmt.Sprintf("git: %d stash entries this call made in %s change %s, where the user's git runs what a checkout writes, and the sandbox could not drop them (%v): tell the user not to apply or pop them", len(drop), old.tree, where, err))
	}
	dropped = true
	return append(notes, fmt.Sprintf("git: %d stash entries this call made in %s change %s, where the user's git runs what a checkout writes, so the sandbox dropped them; they are kept below %sstash/: tell the user to review them there, outside the sandbox, before applying any", len(drop), old.tree, where, quarantineRefs))
}

// putHeadBack puts HEAD back on what it named when the call began.
func (g *Guard) putHeadBack(old, cur *treeSnap) string {
	where := strings.Join(old.paths, ", ")
	var err error
	switch {
	case old.headRef != "":
		_, err = g.treeGit(old, nil, "symbolic-ref", "-m", "nanosandbox-mcp: put back", "HEAD", old.headRef)
	case old.refs["HEAD"] != "":
		_, err = g.treeGit(old, nil, "update-ref", "--no-deref", "-m", "nanosandbox-mcp: put back", "HEAD", old.refs["HEAD"], cur.refs["HEAD"])
	default:
		return ""
	}
	if err != nil {
		return fmt.Sprintf("git: HEAD in %s names a commit of this call that changes %s, where the user's git runs what a checkout writes, and the sandbox could not put it back (%v): tell the user not to reset or check out there before reviewing it", old.tree, where, err)
	}
	return fmt.Sprintf("git: HEAD in %s named a commit of this call that changes %s, where the user's git runs what a checkout writes, so the sandbox put it back where it was (git status now shows the call's files as changes): tell the user to review them before committing", old.tree, where)
}

// putIndexBack restores the index entries below the paths as they were.
func (g *Guard) putIndexBack(old, cur *treeSnap) []string {
	if id, err := lstatIdent(filepath.Join(old.gitdir, "index")); err == nil && sameFile(id, old.indexID) {
		return nil
	}
	now, err := g.takeIndex(cur)
	if err == nil && bytes.Equal(now, old.index) {
		return nil
	}
	where := strings.Join(old.paths, ", ")
	if err != nil {
		return []string{fmt.Sprintf("git: the sandbox could not read the index of %s after this call (%v): tell the user to run git reset -- %s outside the sandbox before any checkout", old.tree, err, where)}
	}
	zero := old.zero
	if zero == "" {
		zero = strings.Repeat("0", 40)
	}
	// Every path first removed (so that stages can be put back), then
	// the old entries, as git ls-files -s wrote them.
	var in bytes.Buffer
	seen := map[string]bool{}
	for _, list := range [][]byte{old.index, now} {
		for _, rec := range bytes.Split(list, []byte{0}) {
			if _, path, ok := bytes.Cut(rec, []byte{'\t'}); ok && !seen[string(path)] {
				seen[string(path)] = true
				fmt.Fprintf(&in, "0 %s\t%s\x00", zero, path)
			}
		}
	}
	for _, rec := range bytes.Split(old.index, []byte{0}) {
		if len(rec) > 0 {
			in.Write(rec)
			in.WriteByte(0)
		}
	}
	if _, err := g.treeGit(old, &in, "update-index", "-z", "--index-info"); err != nil {
		return []string{fmt.Sprintf("git: this call staged changes to %s in %s, where the user's git runs what a checkout writes, and the sandbox could not put them back (%v): tell the user to run git reset -- %s outside the sandbox before any checkout", where, old.tree, err, where)}
	}
	return []string{fmt.Sprintf("git: this call staged changes to %s in %s, where the user's git runs what a checkout writes, so the sandbox put those index entries back as they were", where, old.tree)}
}
