package gitguard

import (
	"runtime"
	"testing"
)

// TestCandidatesOfSpelling: a .git directory is its parent's entry and not
// a bare repository of its own, however a case-insensitive volume (macOS)
// lets it be spelled.
func TestCandidatesOfSpelling(t *testing.T) {
	name := ".git"
	if runtime.GOOS == "darwin" {
		name = ".GIT"
	}
	flags := markerOf(name) | markerOf("HEAD") | markerOf("objects") | markerOf("refs")
	for _, c := range candidatesOf("/ws/"+name, flags, markerOf(name)) {
		if c.bare {
			t.Errorf("/ws/%s is taken for a bare repository too: %+v", name, c)
		}
	}
	if runtime.GOOS == "darwin" && markerOf("head")&hasHEAD == 0 {
		t.Errorf("head is not HEAD on macOS")
	}
}
