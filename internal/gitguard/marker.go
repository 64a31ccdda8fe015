package gitguard

import "strings"

// markerOf is the marker a directory entry's name is, compared without
// case: git opens ".GIT" or "head" for ".git" and "HEAD" on a
// case-insensitive volume (macOS's by default; on Linux vfat, exfat, SMB
// shares and casefolded ext4, f2fs or tmpfs directories), and Unicode's
// folding, as those use, lets "refſ" stand for "refs". On a
// case-sensitive one a name that only folds to a marker makes a candidate
// whose entry git would not open, and the resolver finds nothing there.
func markerOf(name string) uint8 {
	if bit, ok := markers[name]; ok {
		return bit
	}
	// Four to nine letters, each at most three bytes once folded.
	if len(name) < 4 || len(name) > 9*3 {
		return 0
	}
	for m, bit := range markers {
		if strings.EqualFold(name, m) {
			return bit
		}
	}
	return 0
}
