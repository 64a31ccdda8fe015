package sandbox

import (
	"fmt"
	"log/slog"
)

// takeSpare returns the helper started ahead, waiting for it if it is
// being started (it is further along than a helper started now would be),
// or nil.
func (o *osState) takeSpare() *helperProc {
	o.spareMu.Lock()
	if o.spare == nil && o.spareStarting != nil {
		starting := o.spareStarting
		o.spareMu.Unlock()
		<-starting
		o.spareMu.Lock()
	}
	h := o.spare
	o.spare = nil
	o.spareMu.Unlock()
	if h != nil && !h.alive() {
		go h.discard()
		return nil
	}
	return h
}

// refillSpare starts a helper for the next call, unless one is ready or
// being started, or the sandbox keeps none.
func (s *Sandbox) refillSpare() {
	o := &s.os
	o.spareMu.Lock()
	if !o.keepSpare || o.spare != nil || o.spareStarting != nil {
		o.spareMu.Unlock()
		return
	}
	starting := make(chan struct{})
	o.spareStarting = starting
	o.spareMu.Unlock()

	// On failure the next call starts its own helper, and reports why if
	// that fails too (namespaces or processes may be back by then).
	h, _ := s.startSpare()

	o.spareMu.Lock()
	o.spareStarting = nil
	close(starting)
	if !o.keepSpare {
		o.spareMu.Unlock()
		if h != nil {
			h.discard()
		}
		return
	}
	o.spare = h
	o.spareMu.Unlock()
}

// startSpare starts a helper for no call yet. It runs on a goroutine of
// its own, where a panic would end the server: it becomes an error.
func (s *Sandbox) startSpare() (h *helperProc, err error) {
	defer func() {
		if r := recover(); r != nil {
			h, err = nil, bug(fmt.Errorf("start a spare helper: %v", r))
		}
	}()
	return s.startHelper(nil)
}

func (s *Sandbox) keepSpare() {
	// A server makes many calls: keep the writable roots watched, so that
	// git protection costs each call what changed, not what exists.
	if err := s.os.guard.Watch(); err != nil {
		slog.Warn("git guard: " + err.Error())
	}
	// The threads calls need, made now: while commands hold every process
	// the caller may have, the runtime could make none, and it aborts.
	prewarmThreads(serverThreads(s.pol.MaxConcurrent))
	s.os.spareMu.Lock()
	s.os.keepSpare = true
	s.os.spareMu.Unlock()
	go s.refillSpare()
}

func (s *Sandbox) close() {
	s.os.spareMu.Lock()
	s.os.keepSpare = false
	s.os.spareMu.Unlock()
	if h := s.os.takeSpare(); h != nil {
		h.discard()
	}
}
