package e2e

import (
	"strings"
	"testing"
)

// The server's log (its stderr, which MCP clients keep and people tail in
// a terminal) names what a call made, under names the command chose: a
// git directory moved aside under a name holding an OSC title, a colour,
// a newline and a forged line, a carriage return and a byte that is not
// UTF-8 is logged on one line, those escaped.
func TestLogEscapesCommandNames(t *testing.T) {
	e := newEnv(t)
	s := e.serve()
	res, _ := s.sh(t, `d="$(printf 'r\033]0;PWNED\007\033[31mX\n2026-12-03 05:37:48 INFO all calls fine\r\377')" && mkdir "$d" && cd "$d" && git init -q . && printf '#!/bin/sh\n' > .git/hooks/pre-commit`)
	if res.IsError {
		t.Fatalf("the call: %s", text(res))
	}
	log := s.stderr.String()
	if !strings.Contains(log, `git guard: moved `+e.ws+`/r\x1b]0;PWNED\x07\x1b[31mX\n2026-12-03 05:37:48 INFO all calls fine\r\xff/.git aside`) {
		t.Errorf("the log does not name the planted directory, escaped:\n%q", log)
	}
	if strings.ContainsAny(log, "\x1b\x07\r") || strings.Contains(log, "\xff") || strings.Contains(log, "\n2026-12-03 05:37:48 INFO all calls fine") {
		t.Errorf("the log holds a command's control characters:\n%q", log)
	}
}
