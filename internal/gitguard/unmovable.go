package gitguard

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// A repository that holds what the user's git would run and that could
// not be moved aside (renameAside makes that hard for a command, but a
// full disk or a filesystem that refuses renames remain) must not be
// trusted later: not by this server, whose next call would begin while no
// call runs, nor by the next one-shot run or a restarted server, which
// trust what exists when they start. So calls are refused while one is
// there (Begin), and each is written down in the state directory, one file
// per repository, until it is moved aside, made harmless or gone. Without
// a state directory the refusal lasts as long as the server.

// unmovables is where they are written down; dir "" keeps them in memory.
type unmovables struct{ dir string }

func (u unmovables) file(c candidate) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%t", c.entry, c.bare)))
	return filepath.Join(u.dir, hex.EncodeToString(sum[:16]))
}

// save writes c down; a failure is logged by the caller and the refusal
// still holds in memory.
func (u unmovables) save(c candidate, why string) error {
	if u.dir == "" {
		return nil
	}
	if err := os.MkdirAll(u.dir, 0o700); err != nil {
		return fmt.Errorf("unmovable: %w", err)
	}
	b := fmt.Sprintf("entry %s\nbare %t\nwhy %s\n", strconv.Quote(c.entry), c.bare, strconv.Quote(why))
	tmp := u.file(c) + ".tmp"
	if err := os.WriteFile(tmp, []byte(b), 0o600); err != nil {
		return fmt.Errorf("unmovable: %w", err)
	}
	if err := os.Rename(tmp, u.file(c)); err != nil {
		return fmt.Errorf("unmovable: %w", err)
	}
	return nil
}

func (u unmovables) remove(c candidate) {
	if u.dir != "" {
		os.Remove(u.file(c))
	}
}

// load reads what was written down for the repositories below roots.
func (u unmovables) load(in func(path string) bool) map[candidate]string {
	out := map[candidate]string{}
	if u.dir == "" {
		return out
	}
	ents, err := os.ReadDir(u.dir)
	if err != nil {
		return out
	}
	for _, e := range ents {
		if !e.Type().IsRegular() || strings.HasSuffix(e.Name(), ".tmp") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(u.dir, e.Name()))
		if err != nil {
			continue
		}
		var c candidate
		var why string
		for _, line := range strings.Split(string(b), "\n") {
			k, v, _ := strings.Cut(line, " ")
			switch k {
			case "entry":
				c.entry, _ = strconv.Unquote(v)
			case "bare":
				c.bare = v == "true"
			case "why":
				why, _ = strconv.Unquote(v)
			}
		}
		if c.entry != "" && in(c.entry) {
			out[c] = why
		}
	}
	return out
}

// markUnmovable records that what cand holds could not be moved aside.
func (g *Guard) markUnmovable(cand candidate, note string) {
	g.suspect[cand] = note
	if g.unmovable[cand] == note {
		return
	}
	g.unmovable[cand] = note
	if err := g.unmov.save(cand, note); err != nil {
		g.logf("git guard: %v; a restarted server will judge %s again only if it changes", err, cand.entry)
	}
}

// clearUnmovable forgets cand: moved aside, harmless or gone.
func (g *Guard) clearUnmovable(cand candidate) {
	if _, ok := g.unmovable[cand]; !ok {
		return
	}
	delete(g.unmovable, cand)
	g.unmov.remove(cand)
}

// retryUnmovable tries again to move aside what could not be, before a
// call begins. It fails, and the call must not run, while any of it is
// still there and harmful.
func (g *Guard) retryUnmovable() error {
	if len(g.unmovable) == 0 {
		return nil
	}
	cur := g.resolveAll()
	trusted := g.trustedSet()
	cands := make([]candidate, 0, len(g.unmovable))
	for c := range g.unmovable {
		cands = append(cands, c)
	}
	sortCandidates(cands)
	var stuck []string
	for _, cand := range cands {
		els, ok := cur[cand]
		if !ok {
			g.clearUnmovable(cand) // gone: the user removed it
			delete(g.suspect, cand)
			continue
		}
		var changed []element
		for _, e := range els {
			if !trusted[e.key()] {
				changed = append(changed, e)
			}
		}
		failed := ""
		for _, v := range g.judge(cand, els, changed) {
			note, ok := g.neutralize(cand, v)
			if ok && note != "" {
				g.pending = append(g.pending, note)
			}
			if !ok {
				failed = note
			}
		}
		if failed != "" {
			stuck = append(stuck, failed)
			continue
		}
		g.clearUnmovable(cand)
		// Moved aside or harmless now: judged again, as new, when a call
		// ends, and trusted then.
	}
	if len(stuck) > 0 {
		sort.Strings(stuck)
		return fmt.Errorf("%s", strings.Join(stuck, "; "))
	}
	if err := g.refresh(); err != nil {
		return fmt.Errorf("the writable roots cannot be checked for git repositories: %w", err)
	}
	return nil
}
