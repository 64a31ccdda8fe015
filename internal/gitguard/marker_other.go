//go:build !linux

package gitguard

import "strings"

// markerOf is the marker a directory entry's name is. macOS volumes are
// case-insensitive by default, and git there opens ".GIT" or "head" for
// ".git" and "HEAD": compare without case.
func markerOf(name string) uint8 {
	for m, bit := range markers {
		if strings.EqualFold(name, m) {
			return bit
		}
	}
	return 0
}
