package gitguard

import "errors"

// newFinder watches the roots with inotify when watch is set, and walks
// them where it is not or cannot.
func newFinder(roots []string, skip func(string) bool, log func(string), watch bool) (finder, error) {
	if watch {
		t, err := newTree(roots, skip)
		if err == nil {
			return t, nil
		}
		if !errors.Is(err, errNoWatch) {
			return nil, err
		}
		if log != nil {
			log("git guard: cannot watch the writable roots (" + err.Error() + "); they are walked on every call")
		}
	}
	w := &pollFinder{roots: roots, skip: skip}
	if err := w.refresh(); err != nil {
		return nil, err
	}
	return w, nil
}
