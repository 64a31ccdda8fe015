package sandbox

import (
	"errors"
	"io/fs"
	"sync"
)

// placeholders creates the stand-ins for absent protected paths and removes
// them when the last call that needed them ends, so no trace is left behind
// while the server lives. (If the server is killed, an empty directory or a
// ".git/commondir" holding "." stays: both are inert for git.)
type placeholders struct {
	mu    sync.Mutex
	count map[string]*placeholder
}

type placeholder struct {
	n       int
	created bool
	prot    protection
}

// plan computes a call's protections and acquires its placeholders as one
// step, so that no placeholder comes or goes in between: a stand-in left by
// a call still finishing must not be planned as the user's own file and then
// vanish before it is mounted. A protection found present that is a held
// stand-in counts this call as one more user of it.
func (ps *placeholders) plan(compute func() ([]protection, gitState, error)) ([]protection, gitState, func(), error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	prots, st, err := compute()
	if err != nil {
		return nil, st, nil, err
	}
	release, err := ps.acquireLocked(prots)
	return prots, st, release, err
}

// acquire makes sure every placeholder in prots exists and counts this call
// as a user. It returns the function that releases them.
func (ps *placeholders) acquire(prots []protection) (release func(), err error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.acquireLocked(prots)
}

func (ps *placeholders) acquireLocked(prots []protection) (release func(), err error) {
	if ps.count == nil {
		ps.count = map[string]*placeholder{}
	}
	var held []string
	release = func() { ps.release(held) }
	for _, pr := range prots {
		if !pr.Placeholder {
			if e := ps.count[pr.Path]; e != nil {
				e.n++ // another call's stand-in: keep it while this call runs
				held = append(held, pr.Path)
			}
			continue
		}
		e := ps.count[pr.Path]
		if e == nil {
			e = &placeholder{prot: pr}
			created, err := createPlaceholder(pr)
			if err != nil {
				ps.releaseLocked(held)
				return nil, &SetupError{Op: "create placeholder", Err: err.Error()}
			}
			e.created = created
			ps.count[pr.Path] = e
		}
		e.n++
		held = append(held, pr.Path)
	}
	return release, nil
}

func (ps *placeholders) release(paths []string) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.releaseLocked(paths)
}

func (ps *placeholders) releaseLocked(paths []string) {
	// Release in reverse, so a placeholder inside another goes first.
	for i := len(paths) - 1; i >= 0; i-- {
		e := ps.count[paths[i]]
		if e == nil {
			continue
		}
		e.n--
		if e.n > 0 {
			continue
		}
		delete(ps.count, paths[i])
		if e.created {
			removePlaceholder(e.prot)
		}
	}
}

func unwrap(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
