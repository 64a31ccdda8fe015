package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The git rows of DESIGN.md §7: a command must not leave anything the
// user's own git would later run, and an agent's git commit must work.

// gitRepo makes the workspace a repository with one commit and an existing
// pre-commit hook, as a user's project is.
func (e *env) gitRepo() {
	e.t.Helper()
	e.git("init", "-q")
	e.git("-c", "user.name=Host", "-c", "user.email=host@example.com", "add", "README")
	e.git("-c", "user.name=Host", "-c", "user.email=host@example.com", "commit", "-q", "-m", "initial")
	e.write(".git/hooks/pre-commit", "#!/bin/sh\nexit 0\n", 0o755)
}

func TestEscapeGitProtected(t *testing.T) {
	e := newEnv(t)
	e.gitRepo()
	dotgit := filepath.Join(e.ws, ".git")
	state := func(t *testing.T) string {
		return snapshot(t, filepath.Join(dotgit, "hooks")) + "\n" +
			snapshot(t, filepath.Join(dotgit, "config")) + "\n" +
			snapshot(t, filepath.Join(dotgit, "commondir")) + "\n" +
			snapshot(t, filepath.Join(e.ws, ".git.old"))
	}
	before := state(t)

	for _, tt := range []struct{ name, script string }{
		{"write config", `echo '[core]hooksPath = /tmp' >> .git/config`},
		{"git config", `git config core.hooksPath /tmp`},
		{"git config fsmonitor", `git config core.fsmonitor 'touch /tmp/pwned'`},
		{"replace config", `cp .git/config "$TMPDIR/c" && echo '[core]fsmonitor = x' >> "$TMPDIR/c" && mv "$TMPDIR/c" .git/config`},
		{"rename over config", `cp .git/config .git/c2 && mv .git/c2 .git/config`},
		{"remove config", `rm -f .git/config`},
		{"write a hook", `echo 'touch /tmp/pwned' >> .git/hooks/pre-commit`},
		{"truncate a hook", `: > .git/hooks/pre-commit`},
		{"write a new hook", `printf '#!/bin/sh\ntouch /tmp/pwned\n' > .git/hooks/post-checkout && chmod +x .git/hooks/post-checkout`},
		{"enable a sample hook", `mv .git/hooks/pre-push.sample .git/hooks/pre-push`},
		{"chmod a hook", `chmod 777 .git/hooks/pre-commit`},
		{"chmod a hook off", `chmod -x .git/hooks/pre-commit`},
		{"chmod config", `chmod 777 .git/config`},
		{"chmod hooks", `chmod 777 .git/hooks`},
		{"remove a hook", `rm -f .git/hooks/pre-commit`},
		{"rename hooks", `mv .git/hooks x`},
		{"remove hooks", `rm -rf .git/hooks`},
		{"rename .git and plant a hook", `mv .git .git.old && mkdir -p .git/hooks && echo evil > .git/hooks/pre-commit`},
		{"create commondir", `echo /tmp > .git/commondir`},
		{"symlink commondir", `rm -f .git/commondir; ln -s /tmp .git/commondir`},
		{"symlink in hooks", `ln -s /tmp/evil .git/hooks/post-merge`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := e.in(t)
			e.mustDeny(nil, tt.script)
			if got := state(t); got != before {
				t.Errorf("protected git files changed on the host:\n%s\nwant:\n%s", got, before)
			}
		})
	}
	t.Run("mount calls", func(t *testing.T) {
		linuxOnly(t, "mounts")
		e := e.in(t)
		e.wantDenied(nil, "umount", filepath.Join(dotgit, "hooks"))
		e.wantDenied(nil, "umount", filepath.Join(dotgit, "config"))
		e.wantDenied(nil, "remount-rw", filepath.Join(dotgit, "hooks"))
		e.wantDenied(nil, "mount-tmpfs", filepath.Join(dotgit, "hooks"))
		e.wantDenied(nil, "mount-tmpfs", dotgit)
		if got := state(t); got != before {
			t.Errorf("protected git files changed on the host:\n%s\nwant:\n%s", got, before)
		}
	})
	t.Run("commit still works", func(t *testing.T) {
		e := e.in(t)
		e.mustAllow(nil, `git -c user.name=A -c user.email=a@example.com commit -q --allow-empty -m inside`)
		if got := state(t); got != before {
			t.Errorf("protected git files changed on the host:\n%s\nwant:\n%s", got, before)
		}
	})
	// Last: it destroys the repository's objects, which stay writable.
	t.Run("remove .git and init again", func(t *testing.T) {
		e := e.in(t)
		e.mustDeny(nil, `rm -rf .git; git init -q && echo evil > .git/hooks/pre-commit`)
		if got := state(t); got != before {
			t.Errorf("protected git files changed on the host:\n%s\nwant:\n%s", got, before)
		}
	})
}

func TestEscapeGitCommit(t *testing.T) {
	e := newEnv(t)
	// The host's git config: an identity, and a token the sandbox must not see.
	e.write(filepath.Join(e.home, ".gitconfig"), "[user]\n\tname = Nsb Tester\n\temail = nsb@example.com\n"+
		"[url \"https://x-token:"+secretValue+"@example.com/\"]\n\tinsteadOf = https://example.com/\n", 0o644)
	e.gitRepo()
	out := e.mustAllow(nil, `echo hello > new.txt && git add new.txt && git commit -q -m "from the sandbox" && git log -1 --format=%s`)
	if !strings.Contains(out, "from the sandbox") {
		t.Errorf("commit inside: %s", out)
	}
	got := strings.TrimSpace(e.git("log", "-1", "--format=%an|%ae|%cn|%ce|%s"))
	if want := "Nsb Tester|nsb@example.com|Nsb Tester|nsb@example.com|from the sandbox"; got != want {
		t.Errorf("the host sees the last commit as %q, want %q", got, want)
	}
	if st := e.git("status", "--porcelain"); strings.Contains(st, "new.txt") {
		t.Errorf("new.txt not committed: %s", st)
	}
	_, out = e.try(nil, `git config --list --show-origin; cat `+e.home+`/.gitconfig; env`)
	if strings.Contains(out, secretValue) {
		t.Errorf("the host's ~/.gitconfig is visible inside:\n%s", out)
	}
}

// TestEscapeGitSymlinkedDirs points .git/modules or .git/worktrees at a
// directory outside the workspace (both stay writable: what lies below
// them is judged as its own git directory). The server reads the
// repository on the host before and after each call: it must not create
// anything through the symlink (the command cannot write outside the
// workspace, so neither may the server on its behalf), and later calls
// must still run.
func TestEscapeGitSymlinkedDirs(t *testing.T) {
	for _, dir := range []string{"modules", "worktrees"} {
		t.Run(dir, func(t *testing.T) {
			e := newEnv(t)
			e.gitRepo()
			victim := t.TempDir()
			e.write(filepath.Join(victim, "d/config"), "[core]\n", 0o644)
			before := snapshot(t, victim)
			fi, err := os.Stat(filepath.Join(victim, "d"))
			if err != nil {
				t.Fatal(err)
			}
			e.mustAllow(nil, `rm -rf .git/`+dir+` && ln -s `+victim+` .git/`+dir)
			stdout, stderr, code := e.run(nil, "echo", "still running")
			if code != 0 || stdout != "still running\n" {
				t.Errorf("the call after the symlink: exit %d, %q, %s", code, stdout, stderr)
			}
			if got := snapshot(t, victim); got != before {
				t.Errorf("the directory outside changed:\n%s\nwant:\n%s", got, before)
			}
			if fi2, err := os.Stat(filepath.Join(victim, "d")); err != nil {
				t.Error(err)
			} else if !fi2.ModTime().Equal(fi.ModTime()) {
				t.Errorf("the server created and removed entries in %s/d, outside the workspace (mtime %v, was %v)", victim, fi2.ModTime(), fi.ModTime())
			}
		})
	}
}
