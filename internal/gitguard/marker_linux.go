package gitguard

// markerOf is the marker a directory entry's name is, on a case-sensitive
// filesystem.
func markerOf(name string) uint8 { return markers[name] }
