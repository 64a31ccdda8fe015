package gitguard

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Names git lists quoted elsewhere (a newline, a tab, a quote) are read
// whole from git ls-files -z; the user's own bit on one stays, the call's
// goes; an index git holds locked when the call ends is waited for.
func TestHiddenEditsOddNamesAndLock(t *testing.T) {
	f := newFixture(t)
	f.sh(`git init -q && printf a > 'a
b' && printf b > 'c	"d' && printf e > e && git add -A && git -c user.name=U -c user.email=u@example.com commit -qm a && git update-index --assume-unchanged 'a
b'`)
	f.start()
	lock := filepath.Join(f.root, ".git/index.lock")
	c, err := f.g.Begin()
	if err != nil {
		t.Fatal(err)
	}
	f.sh(`git update-index --assume-unchanged 'c	"d' && git update-index --skip-worktree e && echo EVIL >> 'c	"d' && echo EVIL >> e && : > .git/index.lock`)
	go func() {
		time.Sleep(300 * time.Millisecond)
		os.Remove(lock)
	}()
	notes := c.End()
	if len(notes) != 1 || !strings.Contains(notes[0], `assume-unchanged on "c\t\"d"`) || !strings.Contains(notes[0], "skip-worktree on e") {
		t.Errorf("notes: %q", notes)
	}
	if got := f.sh(`git ls-files -v`); got != "h a\nb\nH c\t\"d\nH e\n" && got != "h \"a\\nb\"\nH \"c\\t\\\"d\"\nH e\n" {
		t.Errorf("git ls-files -v: %q", got)
	}
	if got := f.sh(`git status --porcelain`); !strings.Contains(got, " M e") || !strings.Contains(got, `c\t\"d`) {
		t.Errorf("git status: %q", got)
	}
	if _, err := os.Lstat(lock); err == nil {
		t.Error("the lock is still there")
	}
}

// Git sparse-checkout in a call sets skip-worktree on the files it
// removes from the work tree: honest, so they stay so, with no note, and
// the user's git status shows nothing.
func TestHiddenEditsSparseCheckoutStays(t *testing.T) {
	f := newFixture(t)
	f.sh(`git init -q && mkdir a b && echo a > a/x && echo b > b/y && git add -A && git -c user.name=U -c user.email=u@example.com commit -qm a`)
	f.start()
	if notes := f.call(`git sparse-checkout set a`); len(notes) != 0 {
		t.Errorf("notes: %q", notes)
	}
	if got := f.sh(`git ls-files -v`); got != "H a/x\nS b/y\n" {
		t.Errorf("git ls-files -v: %q", got)
	}
	if got := f.sh(`git status --porcelain`); got != "" {
		t.Errorf("git status: %q", got)
	}
}

// A sparse index, which git lists only with the repository's objects, is
// not checked (said in the log) rather than moved aside at every call
// that changes it: the user's staged work and sparse checkout stay.
func TestHiddenEditsSparseIndexKept(t *testing.T) {
	f := newFixture(t)
	f.sh(`git init -q && mkdir a b && echo a > a/x && echo b > b/y && git add -A && git -c user.name=U -c user.email=u@example.com commit -qm a && git sparse-checkout init --cone --sparse-index && git sparse-checkout set a && echo staged >> a/x && git add a/x`)
	f.start()
	if notes := f.call(`echo more > a/z && git add a/z`); len(notes) != 0 {
		t.Errorf("notes: %q", notes)
	}
	if got := f.sh(`git status --porcelain`); got != "M  a/x\nA  a/z\n" {
		t.Errorf("git status: %q", got)
	}
}
