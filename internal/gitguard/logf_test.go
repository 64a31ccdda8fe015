package gitguard

import (
	"strings"
	"sync"
	"testing"
)

// TestLogEscapesNames: a git directory a call made under a name holding
// ESC, CR, LF and a byte that is not UTF-8 is logged as a line with those
// escaped: the server's log, which a terminal shows, is not retitled,
// recoloured or given a forged line by it.
func TestLogEscapesNames(t *testing.T) {
	f := newFixture(t)
	var mu sync.Mutex
	var logged []string
	f.cfg.Log = func(m string) {
		mu.Lock()
		defer mu.Unlock()
		logged = append(logged, m)
	}
	lines := func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := logged
		logged = nil
		return out
	}
	f.start()
	f.call(`d="$(printf 'r\033]0;PWNED\007\033[31mX\n2026-12-03 05:37:48 INFO all calls fine\r\377')" && mkdir "$d" && cd "$d" && git init -q . && printf '#!/bin/sh\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit`)
	got := lines()
	moved := false
	for _, l := range got {
		if strings.ContainsAny(l, "\x1b\r\n\x07") || strings.Contains(l, "\xff") {
			t.Errorf("a log line holds control characters: %q", l)
		}
		moved = moved || strings.Contains(l, `r\x1b]0;PWNED\x07\x1b[31mX\n2026-12-03 05:37:48 INFO all calls fine\r\xff`)
	}
	if !moved {
		t.Errorf("no line names the planted directory, escaped: %q", got)
	}

	// And a line logf makes of any argument.
	f.g.logf("git guard: %s %v %v", "a\x1bb", []string{"c\nd"}, errString("e\rf"))
	if got, want := lines(), `git guard: a\x1bb [c\nd] e\rf`; len(got) != 1 || got[0] != want {
		t.Errorf("logf: got %q, want %q", got, want)
	}
}

type errString string

func (e errString) Error() string { return string(e) }
