package gitguard

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// A server killed during a call (SIGKILL, the OOM killer, a crash) never
// judges what that call left; the next server would trust it. So while
// calls run, each guard keeps a journal in the state directory: when the
// oldest running call began, and the roots. A journal whose owner is gone
// (its lock is free) and that says a call was running is a call nobody
// judged: what was made or changed in its roots since it began is judged
// as new, before anything is trusted.

// journal is this guard's entry in the state directory.
type journal struct {
	dir  string
	f    *os.File // locked (LOCK_EX) for the guard's life
	busy bool
}

// openJournal creates this guard's journal in dir, locked.
func openJournal(dir string) (*journal, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	name := fmt.Sprintf("%d.%d", os.Getpid(), time.Now().UnixNano())
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_RDWR|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("journal: flock: %w", err)
	}
	return &journal{dir: dir, f: f}, nil
}

// begin records that calls run since now, for these roots.
func (j *journal) begin(roots []string) {
	if j == nil || j.busy {
		return
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "since %d\n", time.Now().Add(-time.Second).UnixNano()) // a second early: coarse clocks
	for _, r := range roots {
		fmt.Fprintf(&b, "root %s\n", r)
	}
	// Written over what was there, never truncated: a file that shrinks
	// frees its block, which on a filesystem mounted with discard makes
	// every call wait for the disk. What an earlier entry left beyond
	// this one becomes empty lines.
	if fi, err := j.f.Stat(); err == nil && fi.Size() > int64(b.Len()) {
		b.Write(bytes.Repeat([]byte("\n"), int(fi.Size())-b.Len()))
	}
	j.f.WriteAt(b.Bytes(), 0)
	j.busy = true
}

// endedKey replaces "since", the first word of a busy journal, once its
// calls were judged: parseJournal then finds no start, the same as in an
// empty journal.
const endedKey = "ended"

// end records that no call runs: everything was judged.
func (j *journal) end() {
	if j == nil || !j.busy {
		return
	}
	j.f.WriteAt([]byte(endedKey), 0) // in place, as begin writes
	j.busy = false
}

func (j *journal) close() {
	if j == nil {
		return
	}
	os.Remove(j.f.Name())
	j.f.Close()
}

// orphans reads and removes the journals of guards that are gone, and
// returns when the earliest unjudged call that touched any of roots began
// (0 if none).
func (j *journal) orphans(roots []string) int64 {
	if j == nil {
		return 0
	}
	ents, err := os.ReadDir(j.dir)
	if err != nil {
		return 0
	}
	var since int64
	for _, e := range ents {
		p := filepath.Join(j.dir, e.Name())
		if p == j.f.Name() || !e.Type().IsRegular() {
			continue
		}
		f, err := os.OpenFile(p, os.O_RDWR|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
		if err != nil {
			continue
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			f.Close() // its guard lives
			continue
		}
		b := make([]byte, 64<<10)
		n, _ := f.ReadAt(b, 0)
		t, theirs := parseJournal(b[:n])
		os.Remove(p)
		f.Close()
		if t != 0 && overlaps(roots, theirs) && (since == 0 || t < since) {
			since = t
		}
	}
	return since
}

func parseJournal(b []byte) (since int64, roots []string) {
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, " ")
		switch k {
		case "since":
			since, _ = strconv.ParseInt(v, 10, 64)
		case "root":
			roots = append(roots, v)
		}
	}
	return since, roots
}

func overlaps(a, b []string) bool {
	for _, x := range a {
		for _, y := range b {
			if within(x, y) || within(y, x) {
				return true
			}
		}
	}
	return false
}
