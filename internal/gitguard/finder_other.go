//go:build !linux

package gitguard

// newFinder walks the roots on every refresh: only Linux has inotify.
func newFinder(roots []string, skip func(string) bool, log func(string), watch bool) (finder, error) {
	w := &pollFinder{roots: roots, skip: skip}
	if err := w.refresh(); err != nil {
		return nil, err
	}
	return w, nil
}
