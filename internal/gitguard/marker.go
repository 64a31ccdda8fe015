package gitguard

import "strings"

// markerOf is the marker a directory entry's name is, compared without
// case: git opens ".GIT" or "head" for ".git" and "HEAD" on a
// case-insensitive volume (macOS's by default; on Linux vfat, exfat, SMB
// shares and casefolded ext4, f2fs or tmpfs directories). On a
// case-sensitive one a name that only folds to a marker makes a candidate
// whose entry git would not open, and the resolver finds nothing there.
func markerOf(name string) uint8 {
	switch len(name) {
	case 4, 7, 9: // .git, HEAD, refs; objects; commondir
	default:
		return 0
	}
	if bit, ok := markers[name]; ok {
		return bit
	}
	for m, bit := range markers {
		if strings.EqualFold(name, m) {
			return bit
		}
	}
	return 0
}
