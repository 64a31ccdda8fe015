//go:build !linux

package gitguard

import (
	"fmt"
	"io"
	"os"
)

// readDir reads the directory f for its markers and its subdirectories.
// The entries' types come with their names: a file is never stat'ed.
func readDir(f *os.File) (flags uint8, dirs []string, err error) {
	for {
		ents, err := f.ReadDir(512)
		for _, e := range ents {
			name := e.Name()
			flags |= markerOf(name)
			if e.IsDir() {
				dirs = append(dirs, name)
			}
		}
		if err == io.EOF || len(ents) == 0 {
			return flags, dirs, nil
		}
		if err != nil {
			return 0, nil, fmt.Errorf("read directory %q: %w", f.Name(), err)
		}
	}
}
