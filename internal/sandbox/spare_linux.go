package sandbox

import (
	"fmt"
	"log/slog"
	"sync"
)

// spares holds a helper started ahead of the next call, when the server
// asked for one (keepSpare): starting a helper is most of a call's cost.
type spares struct {
	mu    sync.Mutex
	keep  bool
	spare *helperProc
	// starting is closed when the one being started is ready.
	starting chan struct{}
}

// take returns the helper started ahead, waiting for it if it is being
// started (it is further along than a helper started now would be), or nil.
func (o *spares) take() *helperProc {
	o.mu.Lock()
	if o.spare == nil && o.starting != nil {
		starting := o.starting
		o.mu.Unlock()
		<-starting
		o.mu.Lock()
	}
	h := o.spare
	o.spare = nil
	o.mu.Unlock()
	if h != nil && !h.alive() {
		go h.discard()
		return nil
	}
	return h
}

// refillSpare starts a helper for the next call, unless one is ready or
// being started, or the sandbox keeps none.
func (s *linuxSandbox) refillSpare() {
	o := &s.spares
	o.mu.Lock()
	if !o.keep || o.spare != nil || o.starting != nil {
		o.mu.Unlock()
		return
	}
	starting := make(chan struct{})
	o.starting = starting
	o.mu.Unlock()

	// On failure the next call starts its own helper, and reports why if
	// that fails too (namespaces or processes may be back by then).
	h, _ := s.startSpare()

	o.mu.Lock()
	o.starting = nil
	close(starting)
	if !o.keep {
		o.mu.Unlock()
		if h != nil {
			h.discard()
		}
		return
	}
	o.spare = h
	o.mu.Unlock()
}

// startSpare starts a helper for no call yet. It runs on a goroutine of
// its own, where a panic would end the server: it becomes an error.
func (s *linuxSandbox) startSpare() (h *helperProc, err error) {
	defer func() {
		if r := recover(); r != nil {
			h, err = nil, bug(fmt.Errorf("start a spare helper: %v", r))
		}
	}()
	return s.startHelper(nil)
}

func (s *linuxSandbox) keepSpare() {
	// A server makes many calls: keep the writable roots watched, so that
	// git protection costs each call what changed, not what exists.
	if err := s.guard.Watch(); err != nil {
		slog.Warn("git guard: " + err.Error())
	}
	// The threads calls need, made now: while commands hold every process
	// the caller may have, the runtime could make none, and it aborts.
	prewarmThreads(serverThreads(s.pol.MaxConcurrent))
	s.spares.mu.Lock()
	s.spares.keep = true
	s.spares.mu.Unlock()
	go s.refillSpare()
}

func (s *linuxSandbox) close() {
	s.spares.mu.Lock()
	s.spares.keep = false
	s.spares.mu.Unlock()
	if h := s.spares.take(); h != nil {
		h.discard()
	}
}
