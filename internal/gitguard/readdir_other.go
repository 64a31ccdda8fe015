//go:build !linux

package gitguard

import (
	"fmt"
	"io"
	"io/fs"
	"os"
)

// readDir reads the directory f for its markers, its subdirectories and
// whether it holds a symbolic link. The entries' types come with their names: a file is
// never stat'ed.
func readDir(f *os.File) (flags uint8, dirs []string, links bool, err error) {
	for {
		ents, err := f.ReadDir(512)
		for _, e := range ents {
			name := e.Name()
			flags |= markerOf(name)
			switch {
			case e.IsDir():
				dirs = append(dirs, name)
			case e.Type()&(fs.ModeSymlink|fs.ModeNamedPipe|fs.ModeSocket|fs.ModeDevice) != 0:
				links = true
			}
		}
		if err == io.EOF || len(ents) == 0 {
			return flags, dirs, links, nil
		}
		if err != nil {
			return 0, nil, false, fmt.Errorf("read directory %q: %w", f.Name(), err)
		}
	}
}
