package sandbox

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestMountWatch checks that the watch says the mount table changed after
// a mount, a bind mount and an unmount, once each, and not otherwise.
func TestMountWatch(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root: only root mounts in the host's mount namespace")
	}
	w := watchMounts()
	if w == nil {
		t.Fatal("/proc/self/mountinfo cannot be opened")
	}
	if w.changed() {
		t.Error("changed with no mount made")
	}
	dir, bound := t.TempDir(), t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	defer unix.Unmount(dir, unix.MNT_DETACH)
	if !w.changed() {
		t.Error("a mount is not seen")
	}
	if w.changed() {
		t.Error("a mount is seen twice")
	}
	if err := unix.Mount(dir, bound, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	defer unix.Unmount(bound, unix.MNT_DETACH)
	if !w.changed() {
		t.Error("a bind mount is not seen")
	}
	if w.changed() {
		t.Error("a bind mount is seen twice")
	}
	if err := unix.Unmount(bound, 0); err != nil {
		t.Fatal(err)
	}
	if !w.changed() {
		t.Error("an unmount is not seen")
	}
	var none *mountWatch
	if !none.changed() {
		t.Error("no watch says the table is as it was")
	}
}

// TestMountWatchRead checks that a table longer than the buffer is read
// whole, the buffer grown.
func TestMountWatchRead(t *testing.T) {
	w := watchMounts()
	if w == nil {
		t.Fatal("/proc/self/mountinfo cannot be opened")
	}
	w.buf = make([]byte, 16)
	got, err := w.read()
	want, _ := os.ReadFile("/proc/self/mountinfo")
	if err != nil || string(got) != string(want) {
		t.Errorf("read %q, %v; want %q", got, err, want)
	}
	if w.changed() {
		t.Error("the table read in parts reads as changed")
	}
}
