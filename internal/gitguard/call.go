package gitguard

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Call is one command's run, between Begin and End.
type Call struct {
	g *Guard
	// Protect is what must be read-only while the command runs.
	Protect []Protection
	held    []string // placeholders this call holds
	trees   []*treeSnap
	ended   bool
}

// maxProtections bounds the paths kept read-only for one call.
const maxProtections = 3000

// protectionBudget is maxProtections; tests lower it.
var protectionBudget = maxProtections

// judgeBudget bounds the judging at the end of a call: past it, what is
// left is moved aside unread (a command that makes thousands of
// repositories must not hold the result, or the server, for long).
const judgeBudget = 20 * time.Second

// commondirPlaceholder is what git reads as "no redirection": the git
// directory itself. Written "./", not ".": libgit2 (cargo) takes a
// commondir of "." for a linked worktree's and no longer finds the
// repository (cargo new then nests one), "./" it takes for the git
// directory. Servers before this one wrote ".\n" (oldCommondirPlaceholder):
// what a killed one left is as inert.
const (
	commondirPlaceholder    = "./\n"
	oldCommondirPlaceholder = ".\n"
)

// Begin starts a call: it brings what it knows up to date, trusts what
// changed while no call ran (the user did it), and returns the call with
// what to protect. It fails when the roots cannot be checked: a call then
// must not run.
func (g *Guard) Begin() (*Call, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.refresh(); err != nil {
		return nil, fmt.Errorf("the writable roots cannot be checked for git repositories: %w", err)
	}
	g.recoverOrphans()
	if g.unjudged != 0 {
		// The end of earlier calls could not check the roots: what was
		// made since they began is judged now, not trusted as the user's.
		g.pending = append(g.pending, g.removeUntrusted()...)
		g.pending = append(g.pending, g.recover(g.unjudged, "made by a call whose end could not check it")...)
		g.unjudged = 0
	}
	if err := g.retryUnmovable(); err != nil {
		return nil, err
	}
	if g.running == 0 {
		g.trustLinks() // what the finders found while no call ran: the user's
		clear(g.rebuilt)
	}
	cur := g.resolveAll()
	if g.running == 0 {
		for c, els := range cur {
			if _, bad := g.suspect[c]; !bad {
				if _, was := g.trusted[c]; !was {
					g.user[c] = true // made while no call ran
				}
				g.trusted[c] = els
			}
		}
		for c := range g.trusted {
			if _, ok := cur[c]; !ok {
				delete(g.trusted, c)
			}
		}
		g.holdIndexes()
	}
	for c := range g.user {
		if _, ok := cur[c]; !ok {
			delete(g.user, c)
		}
	}
	call := &Call{g: g, trees: g.snapTrees(cur)}
	prot := map[string]Protection{}
	trusted := g.trustedSet()
	cands := sortedKeys(cur)
	// The user's first, then the shallowest: past maxProtections (each
	// is a mount, and the kernel counts them), the rest are only judged at
	// the end, and a command that makes a thousand repositories must not
	// push the user's out.
	sort.SliceStable(cands, func(i, j int) bool {
		if ui, uj := g.user[cands[i]], g.user[cands[j]]; ui != uj {
			return ui
		}
		return strings.Count(cands[i].entry, "/") < strings.Count(cands[j].entry, "/")
	})
	for _, c := range cands {
		if g.trusted[c] == nil {
			continue // new, or changed while another call ran: judged when a call ends
		}
		if c.bare && isTracked(c) {
			// A bare repository in another's work tree is test data
			// that repository tracks (testdata/x.git): its files are the
			// work tree's, which a checkout rewrites and git status
			// lists, so neither kept read-only nor given stand-ins. What
			// a call changes in it is judged when the call ends.
			continue
		}
		if len(prot) >= protectionBudget {
			g.logf("git guard: more than %d paths to keep read-only; the rest are judged when calls end", protectionBudget)
			break
		}
		for _, e := range cur[c] {
			if trusted[e.key()] {
				g.protect(call, e, prot)
			}
		}
	}
	for _, p := range prot {
		call.Protect = append(call.Protect, p)
	}
	sort.Slice(call.Protect, func(i, j int) bool { return call.Protect[i].Path < call.Protect[j].Path })
	if g.running == 0 {
		g.objw.settle()
		g.sinceMono = time.Now()
		g.since = g.sinceMono.Add(-time.Second).UnixNano() // a second early: coarse clocks
	}
	g.running++
	g.journal.begin(g.scanRoots())
	return call, nil
}

// protect adds what keeps e as it is for the call.
func (g *Guard) protect(call *Call, e element, prot map[string]Protection) {
	kind, root, sandbox := g.place(e.path)
	if kind != inside {
		return
	}
	add := func(dir, link bool) { prot[sandbox] = Protection{Path: sandbox, Dir: dir, Link: link} }
	switch {
	case e.id.isLink():
		add(false, true)
		return
	case e.role == roleEntry || e.role == roleGitdir:
		if e.id.isReg() {
			add(false, false) // a gitfile; a directory is pinned by what is protected in it
		}
		return
	case e.id.isReg() && (e.role == roleCommondir || e.role == roleConfig):
		add(false, false)
		return
	case e.id.isDir() && (e.role == roleHooks || e.role == roleHooksPath):
		add(true, false)
		return
	case e.id.exists():
		return // a special file: judged if it changes
	}
	if g.cfg.Unmounted {
		return // a stand-in nothing keeps read-only would be the command's to fill
	}
	// Absent: a stand-in where git would read it at once, inside the git
	// directory, never in a work tree.
	var dir bool
	var content string
	switch {
	case e.role == roleCommondir:
		content = commondirPlaceholder
	case e.role == roleHooks:
		dir = true
	case e.wtConfig:
		// Empty: no setting. Without it, a config.worktree written
		// during the call (one that moves the work tree out) would
		// cost the user's whole repository at its end.
	default:
		return // included files and the rest: judged if they appear
	}
	ok, err := g.ph.hold(root, e.path, dir, content)
	if err != nil {
		g.logf("git guard: stand-in for %s: %v", sandbox, err)
		return
	}
	if ok {
		call.held = append(call.held, e.path)
		add(dir, false)
	}
}

// End ends the call, once every process of it is gone: every git directory
// that is new or changed since it was trusted is judged, and made harmless
// if the user's git would run anything planted in it. It returns what the
// model should be told.
func (c *Call) End() []string { return c.end(true) }

// EndQuietly ends a call that ran no command (a dry run): what the guard
// has to say (a killed server's calls judged at start) waits for the next.
// No command ran in it, so nothing is judged: what changed meanwhile was
// done by others (a dry run judging would move aside what the user, or
// another program, was making).
func (c *Call) EndQuietly() { c.end(false) }

func (c *Call) end(judge bool) []string {
	g := c.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if c.ended {
		return nil
	}
	c.ended = true
	defer func() {
		for i := len(c.held) - 1; i >= 0; i-- {
			g.ph.release(c.held[i])
		}
		g.running--
		if g.running == 0 {
			g.journal.end()
			g.releaseIndexes()
		}
	}()
	if !judge {
		return nil
	}
	if err := g.refresh(); err != nil {
		// Fail closed. The walk could not read every directory (more
		// than the server's memory allows, or one it could not read):
		// what it found is judged now, as at any end, in one round and
		// with nothing trusted; what it did not reach may hold a
		// repository this call planted, live for the user's git. So
		// calls are refused until a walk can read it all, the next one
		// then judges everything made since this call began (unjudged),
		// and the user is told where not to run git meanwhile.
		g.logf("git guard: %v", err)
		if g.unjudged == 0 || g.since < g.unjudged {
			g.unjudged = g.since
		}
		stores := g.objectStores()
		notes := g.judgeRounds(append(g.pending, g.removeUntrusted()...), false, 1)
		g.pending = nil
		notes = append(notes, g.checkObjects(stores)...)
		notes = append(notes, g.checkTrees(c.trees)...)
		return append(notes, "the sandbox could not check all of the writable roots for git repositories after this call ("+err.Error()+"); it judged the repositories it found, but where it could not look this call may have planted one that runs a program: tell the user not to run git (any git command, git status too, nor a tool that runs it: an editor, a shell prompt) in or below "+g.showRoots()+" until the directories there are fewer; later calls are refused until then")
	}
	stores := g.objectStores() // the trusted repositories', before any is trusted anew
	notes := g.judgeRounds(append(g.pending, g.removeUntrusted()...), g.running == 1, 5)
	g.pending = nil
	notes = append(notes, g.checkObjects(stores)...)
	notes = append(notes, g.checkTrees(c.trees)...)
	return dedupe(notes)
}

// showRoots names the roots walked, as the model sees them.
func (g *Guard) showRoots() string {
	var out []string
	for _, r := range g.scanRoots() {
		out = append(out, g.show(r))
	}
	return strings.Join(out, ", ")
}

// judgeRounds judges every candidate that is new or changed, in up to
// rounds rounds (what is moved aside can uncover more: a repository below
// one moved), and returns notes with what it did added. Only when last (the
// only call running, with a walk that read every directory) does it trust
// what it judged harmless.
func (g *Guard) judgeRounds(notes []string, last bool, rounds int) []string {
	began := time.Now()
	// What the user had before the call, for inTrees: the rounds below
	// trust what they judge harmless, a repository the call made in
	// another's work tree too. A work tree is the user's where a trusted
	// repository named that path, whatever is there now (the user's own
	// mv wt wt.old and a new wt).
	before := maps.Clone(g.trusted)
	made := func(c candidate, e element) bool {
		for _, t := range before[c] {
			if t.role == e.role && t.path == e.path {
				return false
			}
		}
		return true
	}
	for round := 0; round < rounds; round++ {
		cur := g.resolveAll()
		// First the git directories in other repositories' work trees:
		// of a pair, the side the call made goes, and then the other is
		// as it was (the user's, no longer in a tree), not a changed
		// repository to judge anew.
		if ns, moved := g.inTrees(cur, made); moved {
			notes = append(notes, ns...)
			if err := g.refresh(); err != nil {
				break
			}
			continue
		}
		trusted := g.trustedSet()
		acted := false
		for _, cand := range sortedKeys(cur) {
			els := cur[cand]
			var changed []element
			for _, e := range els {
				if e.role == roleIndex && g.rebuilt[e.path] == e.id && e.id.exists() {
					continue // the guard's own, made from HEAD this round
				}
				if !trusted[e.key()] {
					changed = append(changed, e)
				}
			}
			_, wasSuspect := g.suspect[cand]
			if len(changed) == 0 && !wasSuspect {
				continue
			}
			var vs []verdict
			if time.Since(began) < judgeBudget {
				vs = g.judge(cand, els, changed)
			} else {
				vs = unjudged(g.trusted[cand] == nil && cand != global, changed)
			}
			if len(vs) == 0 {
				g.clearUnmovable(cand)
				if last {
					g.trusted[cand] = els
					delete(g.suspect, cand)
				}
				continue
			}
			acted = true
			failed := ""
			for _, v := range vs {
				note, ok := g.neutralize(cand, v)
				if note != "" {
					notes = append(notes, note)
				}
				if !ok {
					failed = v.why
				}
			}
			if failed == "" {
				delete(g.suspect, cand)
				g.clearUnmovable(cand)
			} else if _, ok := g.unmovable[cand]; !ok {
				g.suspect[cand] = failed
			}
		}
		if !acted || rounds == 1 {
			break // one round: a finder that failed is not asked again
		}
		if err := g.refresh(); err != nil {
			break
		}
	}
	if last {
		for cand := range g.trusted {
			if _, bad := g.suspect[cand]; bad {
				delete(g.trusted, cand)
			}
		}
	}
	return dedupe(notes)
}

// dedupe drops repeated notes (a failure is met again in every round).
func dedupe(notes []string) []string {
	seen := map[string]bool{}
	out := notes[:0]
	for _, n := range notes {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// verdict is why a candidate would run something planted, and what to move
// aside: the entry (the whole repository) or one element.
type verdict struct {
	why   string
	whole bool
	el    element
	// undo, if set, are git update-ref --stdin lines that undo what el
	// (replace refs) holds, run in place of moving anything aside.
	undo []string
	// done says the guard made it harmless already: why is the note.
	done bool
}

// judge decides on the changed elements of cand (all of them when it is
// new): whether the user's git would run anything in them. A trusted
// repository loses only what changed; one whose entry or git directory
// changed is new.
func (g *Guard) judge(cand candidate, els, changed []element) []verdict {
	newCand := g.trusted[cand] == nil && cand != global
	for _, e := range changed {
		if e.role == roleEntry || e.role == roleGitdir {
			newCand = cand != global
		}
	}
	// What lies in a grant the user made writable by name is neither
	// protected nor judged: a repository there, and what the user's own
	// repositories name there (husky's hooks directory). A repository
	// made in a call elsewhere is judged whole, wherever its parts lie:
	// the grant covers what is in it, not a redirection into it from the
	// rest of the workspace, which the user's git obeys there.
	// But a repository there inside the work tree of one that is judged:
	// the user's git status in that one enters it as a submodule (a
	// gitlink a call staged) and obeys its config, so it is judged as
	// any other; the grant covers the rest of what is in it.
	candExempt := false
	if k, _, _ := g.place(cand.entry); k == exempt {
		if !g.inJudgedTree(cand) {
			return nil
		}
		candExempt = true
	}
	var out []verdict
	for _, e := range changed {
		kind, _, _ := g.place(e.path)
		if kind == exempt {
			if !newCand && !candExempt {
				continue
			}
			kind = inside
		}
		redirect := e.role == roleEntry || e.role == roleGitdir || e.role == roleCommondir || e.role == roleWorktree
		if (kind == outside || e.odd != "") && e.raw != "" && (!newCand || e.user) {
			// The user's own redirection (of a trusted repository, or
			// their global or enclosing config), now out or unreadable
			// through symlinks made while calls ran: those go, not the
			// repository, and not a symlink of the user's on the way.
			if links := g.plantedLinks(e.raw); len(links) > 0 {
				// The note names what is outside no more than the
				// command that made the links knows.
				what := map[role]string{roleHooksPath: "core.hooksPath", roleWorktree: "work tree", roleRemoteURL: "remote URL"}[e.role]
				for _, l := range links {
					out = append(out, verdict{why: "its " + what + " now leads through " + g.show(l) + ", a symbolic link made while a call ran, out of the writable roots or nowhere git can read", el: element{path: l}})
				}
				continue
			}
		}
		if (e.role == roleIndex || e.role == roleStray || e.role == roleReplace || e.role == roleHistory || e.role == roleRRCache || e.role == roleInfo) && kind != inside {
			continue // no command wrote it: the user or the user's git did, meanwhile
		}
		if (e.role == roleReplace || e.role == roleHistory || e.role == roleRRCache) && e.odd == "" {
			if !newCand { // a repository made in a call shows what the command made anyway
				out = append(out, g.historyVerdicts(e, g.trustedVersion(cand, e, newCand))...)
			}
			continue
		}
		if e.role == roleStray && e.odd == "" {
			out = append(out, g.strayVerdicts(e, g.trustedVersion(cand, e, newCand))...)
			continue
		}
		if e.role == roleStray && !newCand {
			// Too many entries to tell which a call made: not the
			// user's whole git directory for it; said, and judged again
			// at every call's end until the user has removed them.
			out = append(out, verdict{why: "its git directory " + g.show(e.path) + " holds more entries than the sandbox reads (" + e.odd + "), among which a call may have made some that git's scripts run; tell the user to remove those git does not keep there", el: element{role: roleStray}})
			continue
		}
		if e.role == roleRemoteURL {
			if v, ok := g.judgeRemoteURL(cand, e, kind, newCand); ok {
				out = append(out, v)
			}
			continue
		}
		if kind == outside {
			if e.user || !e.id.exists() && !redirect {
				continue // the user's own, or nothing there
			}
			// Never read to tell: whatever is there, the note is the same.
			const why = "it points outside the writable roots, where the sandbox cannot tell what the user's own git would run"
			if e.from != "" {
				return []verdict{{why: why, el: element{role: e.role, path: e.from}}}
			}
			return []verdict{{why: why, whole: true}}
		}
		var why string
		said := false // why says what the user's git would do
		switch {
		case e.odd == oddCommon:
			why = "its " + g.name(e) + " " + strings.TrimPrefix(oddCommon, "it ") + ", where the links the user's own git would write through, outside the sandbox, are not looked for"
		case e.odd == oddTreeInGitdir:
			why = "its " + g.name(e) + " is, or lies in, the git directory " + g.show(e.tree) + ", where the user's own git checkout or reset there writes what a branch holds (hooks/pre-commit, config) into that repository's hooks and config, which its git would run outside the sandbox"
			said = true
		case strings.HasPrefix(e.odd, oddInTree) && !newCand && !slices.ContainsFunc(worktreesOf(cand, els), func(t treeSide) bool { return t.path == e.tree }):
			// The user's git directory, where it was, now in the work
			// tree of another repository: inTrees moves that one when a
			// call made it, and leaves two of the user's as they are.
			continue
		case strings.HasPrefix(e.odd, oddInTree):
			what := "git directory " + g.show(e.tree+"/"+e.treeRel)
			if e.role == roleCommondir {
				what = "common directory " + g.show(e.tree+"/"+e.treeRel) + " (its commondir names it)"
			}
			why = "its " + what + " lies in the work tree " + g.show(e.tree) + ", not below a .git directory, where the user's own git checkout, merge, pull or reset writes what a branch holds: hooks or config a commit carries there would run outside the sandbox"
			said = true
		case e.odd != "":
			g.logf("git guard: %s: %s", e.path, e.odd)
			why = "its " + g.name(e) + " cannot be read safely, so what it does is unknown"
		case e.role == roleCommondir && e.id.exists() && !newCand && !isInertCommondir(e.id.Sum):
			why = "its " + g.name(e) + " now moves its config and hooks elsewhere"
		case e.role == roleConfig && e.content != nil:
			var prev []entry
			if t := g.trustedVersion(cand, e, newCand); t.content != nil {
				prev, _ = g.listByContent(t.content)
			}
			if w := judgeConfigSince(g.listFor(e), e.content, prev); w != "" {
				why = "its " + g.name(e) + " " + strings.TrimPrefix(w, "it ")
				if strings.HasPrefix(w, "it sets ") {
					why += ", a setting outside the short list the sandbox knows to run nothing and lead nowhere (a setting can name a program or a file), which the user's own git would obey outside the sandbox"
					said = true
				}
			}
		case e.role == roleHooks || e.role == roleHooksPath:
			if e.role == roleHooks && cand.bare && isTracked(cand) {
				// Test data another repository tracks: a sample there is
				// that repository's file, enabled by no one.
				e.entries = slices.DeleteFunc(slices.Clone(e.entries), func(en dirEntry) bool { return strings.HasSuffix(en.name, ".sample") })
			}
			if w := judgeHooks(e, g.trustedVersion(cand, e, newCand).entries, g.samples); w != "" {
				why = "its " + g.name(e) + " " + strings.TrimPrefix(w, "it ")
			}
		case e.role == roleOpState:
			if w := judgeOpState(g.listByContent, e, g.trustedVersion(cand, e, newCand)); w != "" {
				why = "its " + g.name(e) + " " + strings.TrimPrefix(w, "it ") + ", which the user's own " + goOn(e.path) + " would run outside the sandbox"
			}
		case e.role == roleRerere && e.id.exists() && e.id.Sum != emptySum && g.trustedVersion(cand, e, newCand).id.Sum != e.id.Sum:
			why = "its " + g.name(e) + " was made or changed by a call: it names the files the user's own git commit (or git rerere) would read and write, wherever the names lead, outside the sandbox too; the conflicts of a merge made in a call are not remembered by rerere"
		case e.role == roleLauncher && e.id.exists():
			if w := launcherRisk(e); w != "" {
				why = "its " + g.name(e) + " " + w + ": the user's next start of this server would run it outside the sandbox"
				said = true
			}
		case e.role == roleAlternates && e.id.exists():
			if w := g.judgeAlternates(e); w != "" {
				why = "its " + g.name(e) + " " + strings.TrimPrefix(w, "it ")
			}
		case e.role == roleIndex:
			if w := g.judgeIndex(e, els); w != "" {
				why = "its " + g.name(e) + " " + strings.TrimPrefix(w, "it ") + ": the user's own git checkout or restore would write there, and git add or commit -a read it, wherever it leads, outside the sandbox too"
				break
			}
			if newCand || cand.bare || cand == global {
				break // a repository a call made is the call's own, flags and all
			}
			switch note, err := g.showHiddenEdits(cand, e, els); {
			case err != nil:
				g.logf("git guard: %s: %v", e.path, err)
				// The error names host paths: the log has it.
				what := "git could not rewrite it"
				if errors.Is(err, errIndexBusy) {
					what = "git held it locked"
				}
				why = "its " + g.name(e) + " could not be made to show the edits a call may have hidden in it from the user's own git status and git diff (" + what + ")"
			case note != "":
				out = append(out, verdict{why: note, done: true})
			}
		case e.role == roleInfo && e.id.exists() && !newCand && !cand.bare:
			// A repository a call made has git init's template there.
			why = "its " + g.name(e) + " was made or changed by a call: " + map[string]string{
				"exclude":    "the user's own git status takes every file it names for ignored, so new files the call left are not listed, with no trace in the work tree",
				"attributes": "the user's own git diff and git status read files as it says (-diff, binary, a diff driver, a filter, a text conversion), which hides or changes what they show, with no trace in the work tree",
			}[filepath.Base(e.path)]
		case e.role == roleRemotes:
			if w := judgeRemotes(e, g.trustedVersion(cand, e, newCand)); w != "" {
				why = "its " + g.name(e) + " " + strings.TrimPrefix(w, "it ") + ", a remote the user's own git push, fetch and pull would use outside the sandbox when the config names no URL for it"
			}
		}
		if why == "" {
			continue
		}
		if !said && e.role != roleOpState && e.role != roleRemotes && e.role != roleRerere && e.role != roleIndex && e.role != roleAlternates && e.role != roleInfo && e.odd != oddCommon {
			why += ", which the user's own git would run outside the sandbox"
		}
		// A work tree is never moved aside itself: it holds the user's
		// files, and the repository that names it is what is planted.
		if e.from != "" {
			return []verdict{{why: why, el: element{role: e.role, path: e.from}}}
		}
		if newCand || e.role == roleEntry || e.role == roleGitdir || e.role == roleWorktree {
			return []verdict{{why: why, whole: true}}
		}
		out = append(out, verdict{why: why, el: e})
	}
	return out
}

// inJudgedTree reports whether a directory above cand's work tree, and
// outside the grants made writable by name, holds a .git entry: cand lies
// in a work tree whose git is judged.
func (g *Guard) inJudgedTree(cand candidate) bool {
	if !filepath.IsAbs(cand.entry) {
		return false
	}
	for a := filepath.Dir(filepath.Dir(cand.entry)); ; a = filepath.Dir(a) {
		if k, _, _ := g.place(a); k != exempt {
			if id, err := lstatIdent(filepath.Join(a, ".git")); err == nil && id.exists() {
				return true
			}
		}
		if a == filepath.Dir(a) {
			return false
		}
	}
}

// isTracked reports whether the bare repository cand lies in another
// repository's work tree, not below a .git: test data that one tracks.
func isTracked(cand candidate) bool {
	_, _, in := inWorkTree(cand.entry, nil, false)
	return in
}

// judgeRemoteURL judges where a remote's local URL leads: into the
// writable roots, or a path the user granted read-only (what git fetch
// copies from there a command could read anyway), or else nowhere a
// command's config may send the user's git push and fetch. A trusted
// repository's remote that was there before keeps going where it went:
// the user's own (a symbolic link made on the way while calls ran is
// removed above). What goes is the repository when it is new, else the
// config file naming the URL.
func (g *Guard) judgeRemoteURL(cand candidate, e element, kind placeKind, newCand bool) (verdict, bool) {
	if kind != outside && e.odd == "" {
		return verdict{}, false
	}
	if kind == outside && e.odd == "" && (!e.id.exists() || g.readable(e.path)) {
		// Nothing there (git tries the next place), and no command can
		// make anything there; or what commands can read anyway.
		return verdict{}, false
	}
	if !newCand {
		for _, t := range g.trusted[cand] {
			if t.role == roleRemoteURL && t.raw == e.raw && t.path == e.path {
				return verdict{}, false
			}
		}
	}
	what, does := "remote URL", "the user's own git push would write into the repository there and run its hooks, and git fetch would copy it in"
	if e.submodule {
		what, does = "submodule URL", "the user's own git submodule update would clone the repository there into the workspace"
	}
	why := "its config " + g.show(e.from) + " names the " + what + " " + quoteCapped(e.raw)
	if e.odd != "" {
		g.logf("git guard: %s: %s", e.raw, e.odd)
		why += ", which cannot be followed safely (" + e.odd + ")"
	} else {
		why += ", which leads outside the writable roots"
	}
	why += ": " + does
	if newCand {
		return verdict{why: why, whole: true}, true
	}
	return verdict{why: why, el: element{role: roleConfig, path: e.from}}, true
}

// readable reports whether path lies in a path the user granted
// read-only.
func (g *Guard) readable(path string) bool {
	for _, r := range g.cfg.Readable {
		if within(path, r) {
			return true
		}
	}
	return false
}

// trustedVersion is the trusted element of cand with e's role and path,
// or the zero element when there is none or cand is new.
func (g *Guard) trustedVersion(cand candidate, e element, newCand bool) element {
	if !newCand {
		for _, t := range g.trusted[cand] {
			if t.role == e.role && t.path == e.path {
				return t
			}
		}
	}
	return element{}
}

// goOn is the command with which the user's git goes on with the
// operation whose state is at path.
func goOn(path string) string {
	switch filepath.Base(path) {
	case "rebase-apply":
		return "git rebase --continue (or git am --continue)"
	case "sequencer":
		return "git cherry-pick --continue"
	}
	return "git rebase --continue (or --skip)"
}

// plantedLinks returns the symlinks the kernel meets on raw, a path as git
// opens it, that lie in a root and were made since the calls running
// began (g.since): a command's, not the user's.
func (g *Guard) plantedLinks(raw string) []string {
	var out []string
	resolvePath(raw, func(l string) {
		if k, _, _ := g.place(l); k == inside && bornSince(l, g.since) && !slices.Contains(out, l) {
			out = append(out, l)
		}
	})
	return out
}

// unjudged is what is moved aside when there is no time left to judge: the
// whole repository when it is new, else what changed in it.
func unjudged(newCand bool, changed []element) []verdict {
	const why = "there were too many changed repositories to check in time, so it was not read"
	if newCand {
		return []verdict{{why: why, whole: true}}
	}
	var out []verdict
	for _, e := range changed {
		if e.role == roleWorktree {
			return []verdict{{why: why, whole: true}}
		}
		if e.id.exists() && (e.role == roleConfig || e.role == roleHooks || e.role == roleHooksPath || e.role == roleCommondir || e.role == roleOpState || e.role == roleRemotes || e.role == roleRerere || e.role == roleIndex || e.role == roleAlternates || e.role == roleInfo) {
			out = append(out, verdict{why: why, el: e})
		}
	}
	return out
}

// inertCommondir is the digest of a commondir that redirects nothing: the
// stand-in a killed server left behind.
var inertCommondir = contentSum([]byte(commondirPlaceholder))

// oldInertCommondir is the digest of what earlier servers' stand-ins hold.
var oldInertCommondir = contentSum([]byte(oldCommondirPlaceholder))

// isInertCommondir reports whether a commondir's digest is a stand-in's.
func isInertCommondir(sum uint64) bool { return sum == inertCommondir || sum == oldInertCommondir }

// emptySum is the digest of an empty file: a MERGE_RR that names nothing,
// as git commit leaves it.
var emptySum = contentSum(nil)

// listFor lists e's content, from the cache when it was listed already.
func (g *Guard) listFor(e element) lister {
	return func(content []byte) ([]entry, error) { return g.listCached(e.path, e.id, content) }
}

// listByContent lists config content that is not a file of its own (an
// operation state's options, now and as trusted).
func (g *Guard) listByContent(content []byte) ([]entry, error) {
	l := g.listContent(content)
	return l.entries, l.err
}

// name says what e is, as the model sees it.
func (g *Guard) name(e element) string {
	s := g.show(e.path)
	switch e.role {
	case roleHooks:
		return "hooks directory " + s
	case roleHooksPath:
		return "core.hooksPath directory " + s
	case roleConfig:
		return "config " + s
	case roleCommondir:
		return "commondir " + s
	case roleWorktree:
		return "work tree (core.worktree) " + s
	case roleOpState:
		return map[string]string{"rebase-merge": "rebase state ", "rebase-apply": "rebase (or am) state ", "sequencer": "cherry-pick state "}[filepath.Base(e.path)] + s
	case roleRemotes:
		return "legacy remotes directory " + s
	case roleRerere:
		return "rerere record " + s
	case roleIndex:
		return "index " + s
	case roleAlternates:
		return "alternates file " + s
	case roleLauncher:
		return "package " + s
	case roleInfo:
		return "file " + s
	}
	return s
}

// show names a path as the model sees it: relative to the first root
// (the workspace) when inside it, else where commands see it.
func (g *Guard) show(path string) string {
	return quoteName(g.showRaw(path))
}

// quoteName is a name a command may have chosen, as a note says it: as it
// is where it is printable ASCII without blanks, else quoted (a name can
// hold a sentence).
func quoteName(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == '"' || r >= 0x7f }) {
		return s
	}
	return strconv.QuoteToASCII(s)
}

// showRaw is show, unquoted.
func (g *Guard) showRaw(path string) string {
	_, _, s := g.place(path)
	if s == "" {
		return path
	}
	if len(g.cfg.Roots) > 0 {
		ws := g.cfg.Roots[0].Sandbox
		if ws == "" {
			ws = g.cfg.Roots[0].Host
		}
		if rel, err := filepath.Rel(ws, s); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
			return rel
		}
	}
	return s
}

// neutralize moves aside what v names, and says so.
func (g *Guard) neutralize(cand candidate, v verdict) (string, bool) {
	if v.done {
		return v.why, true
	}
	target := v.el.path
	if v.whole || cand == global && target == "" {
		target = cand.entry
		if cand.bare {
			target = filepath.Join(cand.entry, "HEAD")
		}
	}
	if len(v.undo) > 0 {
		common := filepath.Dir(filepath.Dir(target))
		if err := g.undoReplace(common, v.undo); err != nil {
			g.logf("git guard: undo replace refs in %s: %v", common, err)
			note := fmt.Sprintf("git: %s: %s; undoing them failed (%v), so tell the user not to run git there until they are removed (git replace -d); calls are refused until then", g.show(target), v.why, err)
			g.markUnmovable(cand, note)
			return note, false
		}
		g.logf("git guard: undid replace refs in %s: %s", common, v.why)
		return fmt.Sprintf("git: undid %s: %s; they are deleted, or set back to what they named before the call", g.show(target), v.why), true
	}
	kind, root, _ := g.place(target)
	if kind == outside || target == "" {
		return fmt.Sprintf("git: %s: %s; the sandbox cannot move it aside: tell the user", g.show(target), v.why), false
	}
	if id, err := lstatIdent(target); err == nil && !id.exists() {
		return "", true // moved with what held it, in this round
	}
	moved, err := moveAside(root, target)
	if err != nil {
		g.logf("git guard: move aside %s: %v", target, err)
		note := fmt.Sprintf("git: %s: %s; moving it aside failed, so tell the user not to run git there until it is removed; calls are refused until then", g.show(target), v.why)
		g.markUnmovable(cand, note)
		return note, false
	}
	if v.whole && !cand.bare {
		// A .git directory renamed is still a directory git would take
		// for a repository if run inside it.
		if id, _ := lstatIdent(moved); id.isDir() {
			renameAside(root, filepath.Join(moved, "HEAD"))
		}
	}
	g.logf("git guard: moved %s aside to %s: %s", target, moved, v.why)
	note := fmt.Sprintf("git: moved %s aside to %s: %s", g.show(target), g.show(moved), v.why)
	if v.whole && !cand.bare {
		// Without it, git run there finds the repository above, if
		// any: commits would land in the user's.
		note += "; git run there now uses the repository that holds it, if any; to take it back once what it holds is removed, the user renames " + g.show(moved) + " to " + filepath.Base(target) + " and, in it, HEAD" + quarantineSuffix + " to HEAD"
	}
	if !v.whole && v.el.role == roleHistory && filepath.Base(target) == "shallow" {
		note += "; if it came from an honest git fetch --depth, the user renames " + g.show(moved) + " back to shallow (without it, git log there fails at the first commit whose parents were not fetched)"
	}
	if !v.whole && v.el.role == roleOpState {
		note += "; " + stoppedHint(moved)
	}
	if !v.whole && v.el.role == roleInfo {
		note += "; to take it back once what it holds is checked, the user renames " + g.show(moved) + " to " + filepath.Base(target)
	}
	if !v.whole && v.el.role == roleIndex {
		// Without an index, the user's next git commit records every
		// file as deleted: git makes a new one from HEAD in its place.
		if err := g.rebuildIndex(filepath.Dir(target)); err != nil {
			g.logf("git guard: a new index for %s: %v", target, err)
			note += "; with no index, the user's next git commit would record every file as deleted: tell the user to run git reset there first (it makes a new index from HEAD, and leaves the work tree as it is)"
		} else {
			note += "; the sandbox made a new index from HEAD in its place: what was staged is gone from it, and the work tree is as it was"
		}
	}
	return note, true
}

// stoppedHint says where an operation moved aside leaves the repository:
// HEAD where it stopped (detached, for a rebase), with no operation for
// git to go on with or abort. The branch it began on is read from the
// state moved aside, as hostile input: a ref name of plain characters, or
// none.
func stoppedHint(moved string) string {
	const hint = "HEAD stays where the operation stopped, and git rebase --abort or --continue has nothing to go on with"
	b, _, err := readRegular(filepath.Join(moved, "head-name"), 1024)
	name, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "refs/heads/")
	if err != nil || !ok || name == "" || strings.Trim(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._/-") != "" {
		return hint + "; to go back, check out the branch it began on"
	}
	return hint + "; to go back to where it began: git checkout " + name
}

// moveAside is renameAside; tests replace it to see what a failure does.
var moveAside = renameAside

// trustedSet is every trusted element, by its key.
func (g *Guard) trustedSet() map[elementKey]bool {
	set := map[elementKey]bool{}
	for _, els := range g.trusted {
		for _, e := range els {
			set[e.key()] = true
		}
	}
	return set
}

// elementKey identifies an element in a state: role, path and what is
// there.
type elementKey struct {
	role role
	path string
	id   ident
	odd  string
}

func (e element) key() elementKey { return elementKey{e.role, e.path, e.id, e.odd} }

func sortedKeys(m map[candidate][]element) []candidate {
	out := make([]candidate, 0, len(m))
	for c := range m {
		out = append(out, c)
	}
	sortCandidates(out)
	return out
}

// recover judges what a call cut short by a killed server left, since it
// began: every git directory whose entry was made since is judged as new,
// and in the others what the call could write and was made since (a
// config.worktree, an included file, a core.hooksPath directory, a
// commondir), and what it could change in place and changed since (a
// stopped operation, legacy remotes, rerere's record, the index:
// changesInPlace). The user's own changes after the crash can be judged
// too: the price of not trusting what nobody checked. It returns the
// notes, each saying why it comes late (left, what was left).
func (g *Guard) recover(since int64, left string) []string {
	g.since = since           // what the killed call may have made
	g.sinceMono = time.Time{} // and the object watcher saw none of it
	if err := g.refresh(); err != nil {
		g.logf("git guard: %v", err)
		return nil
	}
	notes := g.removeSince(since)
	for i := range notes {
		notes[i] += " (" + left + ")"
	}
	cur := g.resolveAll()
	for _, cand := range sortedKeys(cur) {
		els := cur[cand]
		entry := cand.entry
		if cand.bare {
			entry = filepath.Join(cand.entry, "HEAD")
		}
		fresh := cand != global && bornSince(entry, since)
		var changed, kept []element
		for _, e := range els {
			// A repository's own config and hooks, and its entry, were
			// read-only during the call if they existed: made since,
			// they are the user's (git config rewrites the file). A work
			// tree outside the roots is judged whenever it was made: a
			// symlink swapped in on the way to it is not where it is.
			if fresh || !e.main && e.role != roleEntry && e.role != roleGitdir && bornSince(e.path, since) ||
				e.role == roleWorktree && g.outside(e.path) || changesInPlace(e.role) && e.changedSince(since) {
				changed = append(changed, e)
			} else {
				kept = append(kept, e)
			}
		}
		if !fresh {
			// The killed server's stand-ins: remove what is still as made.
			for _, e := range changed {
				kind, root, _ := g.place(e.path)
				switch {
				case kind != inside:
				case e.role == roleCommondir && isInertCommondir(e.id.Sum):
					content := commondirPlaceholder
					if e.id.Sum == oldInertCommondir {
						content = oldCommondirPlaceholder
					}
					removePlaceholder(&placeholder{root: root, path: e.path, content: content})
				case e.role == roleHooks && e.id.isDir() && len(e.entries) == 0:
					removePlaceholder(&placeholder{root: root, path: e.path, dir: true})
				case e.wtConfig && e.id.isReg() && len(e.content) == 0:
					removePlaceholder(&placeholder{root: root, path: e.path}) // only if still empty
				}
			}
		}
		if len(changed) == 0 {
			continue
		}
		if fresh {
			delete(g.trusted, cand)
		} else {
			g.trusted[cand] = kept
		}
		failed := false
		for _, v := range g.judge(cand, els, changed) {
			if note, ok := g.neutralize(cand, v); note != "" {
				notes = append(notes, note+" ("+left+")")
				if !ok {
					failed = true
					if _, ok := g.unmovable[cand]; !ok {
						g.suspect[cand] = v.why
					}
				}
			}
		}
		if !failed {
			g.clearUnmovable(cand)
		}
	}
	// A git directory in another's work tree, either side made since
	// (inTrees): a repository made since, a linked worktree's gitdir made
	// since, or a core.worktree in a file made since (the repository's
	// own config was read-only during the call).
	if err := g.refresh(); err != nil {
		g.logf("git guard: %v", err)
		return notes
	}
	cur = g.resolveAll()
	made := func(c candidate, e element) bool {
		entry := c.entry
		if c.bare {
			entry = filepath.Join(c.entry, "HEAD")
		}
		switch {
		case bornSince(entry, since):
			return true
		case e.role == roleWorktree && e.from != "":
			return bornSince(e.from, since)
		case e.role == roleWorktree:
			for _, x := range cur[c] {
				if x.role == roleConfig && !x.main && bornSince(x.path, since) {
					return true
				}
			}
		}
		return false
	}
	ns, _ := g.inTrees(cur, made)
	for _, n := range ns {
		notes = append(notes, n+" ("+left+")")
	}
	return notes
}

// changesInPlace reports whether an element of role r can change in
// place during a call, where no birth time shows it: nothing keeps it
// read-only while calls run (Begin protects entries, commondir, config and
// hooks), and what it is is what is in it (a to-do list appended to, a
// file added to a directory git init made, an index rewritten). A work
// tree and a remote URL's place are where they lead, not what they hold.
func changesInPlace(r role) bool {
	switch r {
	case roleEntry, roleGitdir, roleCommondir, roleConfig, roleHooks, roleHooksPath, roleWorktree, roleRemoteURL:
		return false
	}
	return true
}

// changedSince reports whether anything in e changed at or after since:
// its own ctime and, for a directory, each entry's; for an index, each
// shared index file's too.
func (e element) changedSince(since int64) bool {
	if changedSince(e.path, since) {
		return true
	}
	if e.role == roleIndex {
		for _, en := range e.entries {
			if changedSince(filepath.Join(filepath.Dir(e.path), en.name), since) {
				return true
			}
		}
	}
	return false
}

// changedSince reports whether what is at path changed at or after since:
// its ctime, which every write, rename into it and change of mode moves,
// and for a directory each entry's (lstat: no symlink is followed, and an
// entry that is a directory is not entered). What cannot be read counts
// as changed.
func changedSince(path string, since int64) bool {
	id, err := lstatIdent(path)
	switch {
	case err != nil:
		return true
	case !id.exists():
		return false
	case id.Ctime >= since:
		return true
	case !id.isDir():
		return false
	}
	ents, did, err := listDir(path, maxStateEntries)
	if err != nil || statEach(path, did, ents) != nil {
		return true
	}
	for _, en := range ents {
		if en.id.Ino == 0 || en.id.Ctime >= since { // gone since it was listed, or changed
			return true
		}
	}
	return false
}
