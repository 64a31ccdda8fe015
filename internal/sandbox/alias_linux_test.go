package sandbox

import "testing"

// TestSharedDevice checks the shortcut of hostFS.Aliases: where no two
// mounts are of one device, no path has a candidate anywhere else.
func TestSharedDevice(t *testing.T) {
	once := []mountEntry{
		{ID: 1, Dev: "8:1", Root: "/", Point: "/"},
		{ID: 2, Dev: "0:30", Root: "/", Point: "/proc"},
		{ID: 3, Dev: "8:2", Root: "/", Point: "/home"},
	}
	if sharedDevice(once) {
		t.Error("three devices mounted once each: shared")
	}
	for _, m := range once {
		for _, p := range []string{m.Point, m.Point + "/x", "/home/u/.ssh"} {
			if c := aliasCandidates(once, p, m.ID); len(c) != 0 {
				t.Errorf("%s on mount %d: candidates %+v", p, m.ID, c)
			}
		}
	}
	bound := append(once, mountEntry{ID: 4, Dev: "8:2", Root: "/u", Point: "/mnt/u"})
	if !sharedDevice(bound) {
		t.Error("/home bound again at /mnt/u: not shared")
	}
	if c := aliasCandidates(bound, "/home/u/.ssh", 3); len(c) != 1 || c[0].Path != "/mnt/u/.ssh" {
		t.Errorf("candidates %+v, want /mnt/u/.ssh", c)
	}
}
