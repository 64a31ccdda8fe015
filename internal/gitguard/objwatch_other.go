//go:build !linux

package gitguard

import "time"

// objWatcher watches nothing here (no inotify): every loose object is
// stat'ed at every end.
type objWatcher struct{}

func newObjWatcher() *objWatcher { return nil }

func (w *objWatcher) close() {}

func (w *objWatcher) settle() {}

func (w *objWatcher) looseChanged(string, int64, time.Time) ([]string, bool) { return nil, false }
