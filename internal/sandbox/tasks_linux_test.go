package sandbox

import (
	"encoding/binary"
	"os"
	"runtime"
	"strconv"
	"testing"
)

func TestStatThreads(t *testing.T) {
	for _, tc := range []struct {
		name, stat string
		want       int
	}{
		{"plain", "42 (sh) S 1 42 42 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 500 2000000 200 18446744073709551615", 1},
		{"name with spaces and parentheses", "42 (a) b (c) S 1 42 42 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 17 0 500", 17},
		{"cut short", "42 (sh) S 1 42", 0},
		{"no name", "garbage", 0},
	} {
		if got := statThreads([]byte(tc.stat)); got != tc.want {
			t.Errorf("%s: statThreads = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// dirent encodes one linux_dirent64 record.
func dirent(name string) []byte {
	reclen := (19 + len(name) + 1 + 7) &^ 7
	b := make([]byte, reclen)
	binary.NativeEndian.PutUint16(b[16:18], uint16(reclen))
	copy(b[19:], name)
	return b
}

func TestAppendPids(t *testing.T) {
	var buf []byte
	for _, n := range []string{".", "..", "1", "self", "2", "4194304", "12a", "sys", "300"} {
		buf = append(buf, dirent(n)...)
	}
	got := appendPids(nil, buf)
	want := []int{2, 4194304, 300}
	if len(got) != len(want) {
		t.Fatalf("appendPids = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("appendPids = %v, want %v", got, want)
		}
	}
	// A record cut short ends the parse instead of reading past it.
	if got := appendPids(nil, buf[:len(buf)-3]); len(got) != 2 {
		t.Errorf("cut buffer: appendPids = %v, want the first two", got)
	}
}

// TestTaskCounterCountsThreads counts this machine's tasks: at least this
// test's own threads, and threads counted only below half the limit.
func TestTaskCounterCountsThreads(t *testing.T) {
	runtime.LockOSThread() // one more thread of this process, at least
	defer runtime.UnlockOSThread()
	c, err := newTaskCounter(1 << 30)
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	if got := threadsOf(c.proc, os.Getpid()); got < 2 {
		t.Errorf("threadsOf(self) = %d, want at least 2", got)
	}
	withThreads := c.sample()
	if withThreads < len(self) {
		t.Errorf("sample = %d, want at least this process's %d threads", withThreads, len(self))
	}
	ents, _ := os.ReadDir("/proc")
	procs := 0
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err == nil && e.Name() != "1" {
			procs++
		}
	}
	// Processes come and go on a shared machine: compare loosely.
	few, err := newTaskCounter(2)
	if err != nil {
		t.Fatal(err)
	}
	if got := few.sample(); got > procs+50 || got < procs-50 {
		t.Errorf("processes only: %d, want about %d (with threads: %d)", got, procs, withThreads)
	}
	if c.peak() < withThreads {
		t.Errorf("peak %d below an earlier sample %d", c.peak(), withThreads)
	}
}
