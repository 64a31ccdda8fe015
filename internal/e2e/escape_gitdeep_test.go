package e2e

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// A command plants a repository with core.fsmonitor at the bottom of a
// chain of directories near PATH_MAX, beside 2,000 more (the red team's
// shape, smaller: with ~450,000 the end of the call ran out of its 60
// seconds, opening each directory by its whole path, and judged nothing).
// The end of the call judges it, and the next call is not refused.
func TestEscapeGitDeepTree(t *testing.T) {
	e := newEnv(t)
	e.gitRepo()
	s := e.serve()
	n := (4095 - len(e.ws) - 300) / 2
	script := `mkdir deep && cd deep && i=0 && while [ $i -lt ` + strconv.Itoa(n) + ` ]; do mkdir d && cd d || exit 1; i=$((i+1)); done &&
for g in $(seq 1 2); do mkdir g$g && (cd g$g && mkdir $(seq 1 1000)) || exit 1; done &&
git init -q r && git -C r config core.fsmonitor "$PWN" && echo made`
	began := time.Now()
	res, out := s.sh(t, e.expand(script))
	t.Logf("%d directories deep, 2,000 beside: the call took %s, the command %d ms", n, time.Since(began), out.DurationMS)
	if out.Stdout != "made\n" {
		t.Fatalf("the attack did not run: %s", text(res))
	}
	if !strings.Contains(strings.Join(out.Notes, "\n"), "sets core.fsmonitor") {
		t.Errorf("the planted repository was not judged: notes %q", out.Notes)
	}
	began = time.Now()
	if e.userGit("deep/" + strings.Repeat("d/", n) + "r") {
		t.Error("planted code ran")
	}
	t.Logf("the user's git took %s", time.Since(began))
	if _, out := s.sh(t, "echo ok"); out.Stdout != "ok\n" {
		t.Errorf("the next call: %+v", out)
	}
}
