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

// acquire makes sure every placeholder in prots exists and counts this call
// as a user. It returns the function that releases them.
func (ps *placeholders) acquire(prots []protection) (release func(), err error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.count == nil {
		ps.count = map[string]*placeholder{}
	}
	var held []string
	release = func() { ps.release(held) }
	for _, pr := range prots {
		if !pr.Placeholder {
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
