package e2e

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Git's scripts read a git directory too, and what they read there a
// command can plant: git's prompt (__git_ps1, in PROMPT_COMMAND mode) puts
// a stopped rebase's step counts into the shell's prompt as they are, and
// git instaweb runs gitweb/lighttpd from the git directory where no
// lighttpd is installed. Each works on the host; through the sandbox,
// one-shot and over MCP, the call's end moves it aside.
func TestEscapeGitScriptsPlanted(t *testing.T) {
	const gitPrompt = "/usr/lib/git-core/git-sh-prompt"
	for _, tt := range []struct {
		name  string
		needs func() string // why the user's tool cannot run here, or ""
		plant string
		user  func(e *env)
		note  string
	}{
		{name: "a rebase step count in the user's prompt",
			needs: func() string {
				if _, err := os.Stat(gitPrompt); err != nil {
					return "needs git's prompt script at " + gitPrompt
				}
				if _, err := exec.LookPath("bash"); err != nil {
					return "needs bash"
				}
				return ""
			},
			plant: `mkdir .git/rebase-merge && git symbolic-ref HEAD > .git/rebase-merge/head-name && printf '%s\n' '$(touch PWNED-PATH)' > .git/rebase-merge/msgnum && echo 2 > .git/rebase-merge/end`,
			user: func(e *env) {
				// As bash draws a prompt set by __git_ps1: PS1 expanded.
				cmd := exec.Command("bash", "-c", `. `+gitPrompt+` && __git_ps1 "\u" "\\\$ " && eval "p=\"$PS1\""`)
				cmd.Dir, cmd.Env = e.ws, e.vars
				cmd.Run()
			},
			note: "moved .git/rebase-merge aside"},
		{name: "git instaweb's web server",
			needs: func() string {
				if _, err := exec.LookPath("lighttpd"); err == nil {
					return "lighttpd is installed: git instaweb runs it, not the git directory's"
				}
				if err := exec.Command("git", "instaweb", "-h").Run(); err != nil && !strings.Contains(err.Error(), "exit status 129") {
					return "needs git instaweb"
				}
				return ""
			},
			plant: `mkdir .git/gitweb && printf '#!/bin/sh\ntouch PWNED-PATH\n' > .git/gitweb/lighttpd && chmod +x .git/gitweb/lighttpd`,
			user: func(e *env) {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				cmd := exec.CommandContext(ctx, "git", "instaweb", "--browser=true")
				cmd.Dir, cmd.Env = e.ws, e.vars
				// instaweb waits for its server without end where none
				// started (the planted one exits; the sandbox's call
				// moved it aside): its script and that wait are ended
				// with it, as a process group.
				cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
				cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
				cmd.Run()
				stop := exec.Command("git", "instaweb", "--stop")
				stop.Dir, stop.Env = e.ws, e.vars
				stop.Run()
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // what is left of the group
			},
			note: "moved .git/gitweb aside"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if why := tt.needs(); why != "" {
				t.Skip(why)
			}
			ran := func(e *env) bool {
				os.Remove(e.pwned())
				tt.user(e)
				_, err := os.Lstat(e.pwned())
				return err == nil
			}
			plant := func(e *env) string { return strings.ReplaceAll(tt.plant, "PWNED-PATH", e.pwned()) }
			t.Run("control", func(t *testing.T) {
				e := plantEnv(t)
				e.gitRepo()
				e.hostSh(plant(e))
				if !ran(e) {
					t.Fatal("planted on the host, the user's tool ran nothing: the attack tests nothing")
				}
			})
			t.Run("one-shot", func(t *testing.T) {
				e := plantEnv(t)
				e.gitRepo()
				_, stderr, _ := e.sh(plant(e))
				if !strings.Contains(stderr, tt.note) {
					t.Errorf("no note %q: %q", tt.note, stderr)
				}
				if ran(e) {
					t.Errorf("the user's tool ran what the sandbox planted\nstderr: %q", stderr)
				}
			})
			t.Run("mcp", func(t *testing.T) {
				e := plantEnv(t)
				e.gitRepo()
				s := e.serve()
				res, _ := s.sh(t, plant(e))
				if !strings.Contains(text(res), tt.note) {
					t.Errorf("no note %q: %s", tt.note, text(res))
				}
				if ran(e) {
					t.Errorf("the user's tool ran what the sandbox planted\nresult: %s", text(res))
				}
			})
		})
	}
}

// An alternates file naming a repository in the hidden home: the user's
// git reads its objects as the workspace's own, and git fsck --lost-found
// writes its dangling blobs into the workspace, where the next call reads
// them. Control on the host, then one-shot and over MCP.
func TestEscapeGitAlternatesOutside(t *testing.T) {
	setup := func(t *testing.T) *env {
		e := plantEnv(t)
		e.gitRepo()
		priv := e.home + "/private-project"
		e.git("init", "-q", priv)
		e.write(priv+"/wip", "WIP "+secretValue+"\n", 0o600)
		e.git("-C", priv, "add", "wip")
		e.git("-C", priv, "rm", "-q", "--cached", "wip")
		return e
	}
	plant := func(e *env) string {
		return `echo "` + e.home + `/private-project/.git/objects" > .git/objects/info/alternates`
	}
	leaked := func(e *env) bool {
		e.gitTry("fsck", "--lost-found")
		out, _ := exec.Command("sh", "-c", "cat "+e.ws+"/.git/lost-found/other/* 2>/dev/null").Output()
		return strings.Contains(string(out), secretValue)
	}
	t.Run("control", func(t *testing.T) {
		e := setup(t)
		e.hostSh(plant(e))
		if !leaked(e) {
			t.Fatal("planted on the host, nothing hidden landed in the workspace: the attack tests nothing")
		}
	})
	t.Run("one-shot", func(t *testing.T) {
		e := setup(t)
		_, stderr, _ := e.sh(plant(e))
		if !strings.Contains(stderr, "moved .git/objects/info/alternates aside") {
			t.Errorf("no note of the alternates file moved aside: %q", stderr)
		}
		if leaked(e) {
			t.Errorf("the hidden repository's objects landed in the workspace\nstderr: %q", stderr)
		}
	})
	t.Run("mcp", func(t *testing.T) {
		e := setup(t)
		s := e.serve()
		res, _ := s.sh(t, plant(e))
		if !strings.Contains(text(res), "moved .git/objects/info/alternates aside") {
			t.Errorf("no note of the alternates file moved aside: %s", text(res))
		}
		if leaked(e) {
			t.Errorf("the hidden repository's objects landed in the workspace\nresult: %s", text(res))
		}
	})
}
