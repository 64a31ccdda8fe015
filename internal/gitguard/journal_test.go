package gitguard

import (
	"os"
	"slices"
	"testing"
)

// TestJournalInPlace checks the journal's entry through calls: busy with
// the roots of the call running, idle after, never shorter on disk (a
// shrinking file frees its block: see begin).
func TestJournalInPlace(t *testing.T) {
	j, err := openJournal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer j.close()
	read := func() (int64, []string, int64) {
		b, err := os.ReadFile(j.f.Name())
		if err != nil {
			t.Fatal(err)
		}
		since, roots := parseJournal(b)
		return since, roots, int64(len(b))
	}
	var size int64
	for i, roots := range [][]string{{"/w/long-root-name", "/other"}, {"/w"}, {"/w", "/x"}} {
		j.begin(roots)
		since, got, n := read()
		if since == 0 || !slices.Equal(got, roots) {
			t.Errorf("call %d running: since %d, roots %q; want a start and %q", i, since, got, roots)
		}
		if n < size {
			t.Errorf("call %d: the journal shrank from %d to %d bytes", i, size, n)
		}
		size = n
		j.end()
		if since, got, n := read(); since != 0 || n != size {
			t.Errorf("call %d ended: since %d (roots %q), %d bytes; want no start, %d bytes", i, since, got, n, size)
		}
	}
}
