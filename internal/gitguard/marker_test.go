package gitguard

import "testing"

// TestCandidatesOfSpelling: a .git directory is its parent's entry and not
// a bare repository of its own, however a case-insensitive volume (macOS's;
// vfat, exfat or a casefolded directory on Linux) lets it be spelled, and
// every spelling is found.
func TestCandidatesOfSpelling(t *testing.T) {
	for _, name := range []string{".git", ".GIT", ".Git"} {
		flags := markerOf(name) | markerOf("HEAD") | markerOf("objects") | markerOf("refs")
		if flags&hasDotgit == 0 {
			t.Errorf("%s is not a .git", name)
		}
		for _, c := range candidatesOf("/ws/"+name, flags, markerOf(name)) {
			if c.bare {
				t.Errorf("/ws/%s is taken for a bare repository too: %+v", name, c)
			}
		}
	}
	for name, want := range map[string]uint8{"head": hasHEAD, "OBJECTS": hasObjects, "Refs": hasRefs, "CommonDir": hasCommondir, "refſ": hasRefs, "gits": 0, "HEADS": 0} {
		if got := markerOf(name); got != want {
			t.Errorf("markerOf(%q) = %d, want %d", name, got, want)
		}
	}
}
