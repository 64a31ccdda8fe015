package gitguard

import (
	"path/filepath"
	"strings"
)

// A git directory that lies in the work tree of another repository, not
// below a .git component, is one that other repository's git writes into
// and deletes in: a checkout, reset --hard or stash pop there writes what a
// branch holds (a config with core.fsmonitor, hooks/post-checkout), and
// git clean deletes. resolve already refuses a git directory in its own
// work tree and in those of the repositories above it (inWorkTree); the
// work trees it cannot see from there are those of other repositories the
// guard knows: a core.worktree of any config or config.worktree (a bare
// repository's too) and a linked worktree's. inTrees pairs every git
// directory with every work tree, and moves aside the side a call made:
// the repository in the tree, else the one whose tree holds it. Two the
// user made are left as they are (README: a git directory of yours in a
// work tree is yours to review).

// treeSide is a work tree a repository names, and what names it: the
// repository's entry (its own work tree) or a work tree element (a
// core.worktree, a linked worktree's gitdir).
type treeSide struct {
	cand candidate
	path string
	el   element
}

// dirSide is a git directory or common dir of a repository, and the
// element that leads there.
type dirSide struct {
	cand candidate
	path string
	el   element
}

// worktreesOf returns the work trees git of cand writes in: its own (a
// bare repository has none), or what core.worktree names instead, and a
// linked worktree's.
func worktreesOf(cand candidate, els []element) []treeSide {
	var out []treeSide
	core := false
	for _, e := range els {
		if e.role == roleWorktree && e.from == "" {
			core = true
		}
	}
	if !cand.bare && !core && len(els) > 0 && els[0].role == roleEntry && els[0].odd == "" {
		out = append(out, treeSide{cand, filepath.Dir(cand.entry), els[0]})
	}
	for _, e := range els {
		if e.role == roleWorktree && e.odd == "" && filepath.IsAbs(e.path) {
			out = append(out, treeSide{cand, e.path, e})
		}
	}
	return out
}

// gitdirsOf returns where cand's git directory and common dir are, and
// whether cand is found by a .git entry (the repository git enters from a
// work tree). A bare repository itself is not listed: one in another's
// work tree is the local remote or test data inWorkTree leaves be, and a
// .git file that leads to one lists it.
func gitdirsOf(cand candidate, els []element) (own []string, sides []dirSide) {
	var gitdir string
	for _, e := range els {
		switch {
		case e.role == roleGitdir && inTreeOrPlain(e) && e.id.isDir():
			gitdir = e.path
			own = append(own, e.path)
			if !cand.bare {
				sides = append(sides, dirSide{cand, e.path, e})
			}
		case e.role == roleConfig && e.main && gitdir != "":
			common := filepath.Dir(e.path)
			if common == gitdir {
				continue
			}
			own = append(own, common)
			if cand.bare {
				continue
			}
			for _, c := range els {
				if c.role == roleCommondir && inTreeOrPlain(c) {
					sides = append(sides, dirSide{cand, common, c})
				}
			}
		}
	}
	return own, sides
}

// inTreeOrPlain reports whether e was read whole: no oddity, or only
// that it lies in a work tree (what inTrees is about).
func inTreeOrPlain(e element) bool { return e.odd == "" || strings.HasPrefix(e.odd, oddInTree) }

// inTrees moves aside, of every pair of a git directory and another
// repository's work tree holding it, the side made (made reports whether
// an element of a candidate is not as the user had it), and says so. It
// reports whether it moved, or failed to move, anything.
func (g *Guard) inTrees(cur map[candidate][]element, made func(candidate, element) bool) ([]string, bool) {
	trees := map[string][]treeSide{}
	own := map[candidate][]string{}
	var dirs []dirSide
	for _, cand := range sortedKeys(cur) {
		if cand == global {
			continue
		}
		els := cur[cand]
		for _, t := range worktreesOf(cand, els) {
			trees[t.path] = append(trees[t.path], t)
		}
		o, d := gitdirsOf(cand, els)
		own[cand] = o
		dirs = append(dirs, d...)
	}
	if len(trees) == 0 {
		return nil, false
	}
	var notes []string
	acted := false
	done := map[candidate]bool{}
	for _, d := range dirs {
		// Up from the git directory to the root, as inWorkTree: git
		// writes no path with a .git component (in any case), so a work
		// tree above one does not reach it.
		for a := d.path; ; a = filepath.Dir(a) {
			if strings.EqualFold(filepath.Base(a), ".git") {
				break
			}
			for _, t := range trees[a] {
				if t.cand == d.cand || done[d.cand] || done[t.cand] || sameRepository(own[t.cand], own[d.cand]) {
					continue
				}
				var cand candidate
				var v verdict
				switch {
				case made(d.cand, d.el):
					cand, v = d.cand, verdict{whole: true, why: g.inTreeWhy(d, t)}
				case made(t.cand, t.el):
					cand, v = t.cand, verdict{whole: true, why: g.holdsWhy(d, t)}
					if t.el.from != "" {
						// A linked worktree's gitdir file names it: that
						// goes, not the repository (as judge does).
						v = verdict{why: v.why, el: element{role: roleWorktree, path: t.el.from}}
					}
				default:
					continue // both the user's
				}
				acted = true
				note, ok := g.neutralize(cand, v)
				if note != "" {
					notes = append(notes, note)
				}
				switch {
				case !ok:
					if _, ok := g.unmovable[cand]; !ok {
						g.suspect[cand] = v.why
					}
				case v.whole:
					delete(g.trusted, cand)
				}
				done[cand] = true
			}
			if a == filepath.Dir(a) {
				break
			}
		}
	}
	return notes, acted
}

// sameRepository reports whether two candidates share a git directory or
// common dir: the .git file of a repository and the git directory it
// leads to, a linked worktree and its main one.
func sameRepository(a, b []string) bool {
	for _, x := range a {
		for _, y := range b {
			if x == y {
				return true
			}
		}
	}
	return false
}

// treeName says what work tree t is, as the model sees it.
func (g *Guard) treeName(t treeSide) string {
	s := "the work tree " + g.show(t.path)
	switch {
	case t.el.role != roleWorktree:
		return s + " of the repository " + g.show(t.cand.entry)
	case t.el.from != "":
		return s + " that the linked worktree's gitdir " + g.show(t.el.from) + " names"
	}
	return s + " that the core.worktree of " + g.show(t.cand.entry) + " names"
}

// inTreeWhy is why the repository of d, made by a call, goes.
func (g *Guard) inTreeWhy(d dirSide, t treeSide) string {
	what := "git directory"
	if d.el.role == roleCommondir {
		what = "common directory (its commondir names it)"
	}
	return "its " + what + " " + g.show(d.path) + " lies in " + g.treeName(t) + ", not below a .git directory, where the user's own git checkout, reset --hard or stash pop there writes what a branch holds: hooks or config a commit carries there would run outside the sandbox"
}

// holdsWhy is why the repository naming t, made or redirected by a call,
// goes.
func (g *Guard) holdsWhy(d dirSide, t treeSide) string {
	what := "work tree " + g.show(t.path)
	switch {
	case t.el.from != "":
		what = "linked worktree's work tree " + g.show(t.path)
	case t.el.role == roleWorktree:
		what = "work tree (core.worktree) " + g.show(t.path)
	}
	return "its " + what + " holds, not below a .git directory, the git directory " + g.show(d.path) + " of the repository " + g.show(d.cand.entry) + ": the user's own git checkout, reset, stash or clean there would write or delete in that git directory (its config and hooks, which that repository's git runs outside the sandbox)"
}
