package sandbox

import (
	"os"

	"golang.org/x/sys/unix"
)

// Aliases finds, from this process's mount table, where else each path
// shows (see alias.go), keeping only the places the host confirms: the path
// there is reached through that mount (no other mount covers it), and, for
// the whole object, is the same file.
func (h hostFS) Aliases(paths []string) map[string][]alias {
	out, _ := h.AliasesOnce(paths)
	return out
}

// AliasesOnce is Aliases, and whether every filesystem is mounted once
// (then there are none, for any path: see onceFinder).
func (hostFS) AliasesOnce(paths []string) (map[string][]alias, bool) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, false
	}
	mounts := parseMountinfo(b)
	out := map[string][]alias{}
	if !sharedDevice(mounts) {
		// Every filesystem is mounted once: nothing shows anywhere else
		// (aliasCandidates would find no other mount of any path's), and
		// nothing need be asked path by path.
		return out, true
	}
	for _, p := range paths {
		id, ok := mountID(p)
		if !ok {
			continue
		}
		orig, err := os.Lstat(p)
		if err != nil {
			continue
		}
		for _, c := range aliasCandidates(mounts, p, id) {
			if c.Path == p {
				continue
			}
			if m, ok := mountID(c.Path); !ok || m != c.Mount {
				continue // another mount covers it there, or it is gone
			}
			if !c.Part {
				if fi, err := os.Lstat(c.Path); err != nil || !os.SameFile(orig, fi) {
					continue
				}
			}
			out[p] = append(out[p], alias{Path: c.Path, Part: c.Part})
		}
	}
	return out, false
}

// mountID returns the ID of the mount path is on, as in mountinfo (Linux
// 5.8+), without following a final symlink.
func mountID(path string) (int, bool) {
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_MNT_ID, &st); err != nil || st.Mask&unix.STATX_MNT_ID == 0 {
		return 0, false
	}
	return int(st.Mnt_id), true
}

// sharedDevice reports whether two of mounts are of one filesystem (the
// same device), the only way one object shows in two places.
func sharedDevice(mounts []mountEntry) bool {
	seen := map[string]bool{}
	for _, m := range mounts {
		if seen[m.Dev] {
			return true
		}
		seen[m.Dev] = true
	}
	return false
}
