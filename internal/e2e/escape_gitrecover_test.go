package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// killMidCall starts a server, has it run script (which touches "planted"
// when it has done its work, then sleeps), and SIGKILLs the server during
// the call, as a client that kills its servers, or the OOM killer, would.
func killMidCall(t *testing.T, e *env, script string) {
	t.Helper()
	s := e.serve()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.callAsync(ctx, map[string]any{"command": "sh", "args": []string{"-c", e.expand(script + ` && touch planted && sleep 60`)}})
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(e.ws, "planted")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the call did not plant")
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.cmd.Process.Kill()
	select {
	case <-s.stderr.done:
	case <-time.After(15 * time.Second):
		t.Fatal("the killed server's output stayed open: something it started outlived it")
	}
	os.Remove(filepath.Join(e.ws, "planted"))
}

// A server killed during a call that appended an exec line to the user's
// own stopped rebase (red team round 7, finding 5): the to-do list changes
// in place, in a state directory born before the call, which no birth time
// shows. The next server, or the next one-shot run, judges what changed
// in it since the call began, and moves it aside before the user's git
// rebase --continue runs the line.
func TestEscapeGitServerKilledMidCallInPlace(t *testing.T) {
	const appendExec = `echo "exec $PWN" >> .git/rebase-merge/git-rebase-todo`
	setup := func(t *testing.T) *env {
		e := plantEnv(t)
		e.gitRepo()
		// Stopped at a conflict, as the red team's was.
		e.hostSh(`b=$(git symbolic-ref --short HEAD) && git checkout -qb topic && echo topic > README && git commit -qam topic &&
git checkout -q "$b" && echo base > README && git commit -qam base && git checkout -q topic && { git rebase -q "$b" >/dev/null 2>&1; test -d .git/rebase-merge; }`)
		if _, err := os.Stat(filepath.Join(e.ws, ".git/rebase-merge/git-rebase-todo")); err != nil {
			t.Fatalf("the user's rebase did not stop: %v", err)
		}
		time.Sleep(1100 * time.Millisecond) // the user's rebase is older than the call
		return e
	}
	goOn := func(e *env) bool {
		os.Remove(e.pwned())
		e.write("README", "resolved\n", 0o644)
		e.gitTry("add", "README")
		e.gitTry("-c", "core.editor=true", "rebase", "--continue")
		_, err := os.Lstat(e.pwned())
		return err == nil
	}
	t.Run("control", func(t *testing.T) {
		e := setup(t)
		e.hostSh(e.expand(appendExec))
		if !goOn(e) {
			t.Fatal("appended on the host, the exec line did not run at the user's git rebase --continue: the attack tests nothing")
		}
	})
	for _, next := range []string{"server", "one-shot"} {
		t.Run("next "+next, func(t *testing.T) {
			e := setup(t)
			killMidCall(t, e, appendExec)
			if b, _ := os.ReadFile(filepath.Join(e.ws, ".git/rebase-merge/git-rebase-todo")); !strings.Contains(string(b), "exec touch") {
				t.Fatalf("control: with the server killed, the to-do list holds no exec line (the case this test is about): %q", b)
			}
			var notes string
			if next == "server" {
				res, _ := e.serve().sh(t, "true")
				notes = text(res)
			} else {
				_, notes, _ = e.sh("true")
			}
			if !strings.Contains(notes, "moved .git/rebase-merge aside") || !strings.Contains(notes, "did not finish") {
				t.Errorf("the next %s's first call: %s", next, notes)
			}
			if goOn(e) {
				t.Error("the user's git rebase --continue ran the exec line the killed server's call appended")
			}
		})
	}
}
