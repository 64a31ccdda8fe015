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
		{"replace config", `cp .git/config /tmp/c && echo '[core]fsmonitor = x' >> /tmp/c && mv /tmp/c .git/config`},
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

// noRepository checks that the host's git, run in the workspace, finds no
// repository and runs nothing planted there, and that no placeholder is left.
func (e *env) noRepository() {
	e.t.Helper()
	if _, err := os.Lstat(filepath.Join(e.ws, ".git")); err == nil {
		e.t.Errorf("%s/.git exists after the call: %s", e.ws, snapshot(e.t, filepath.Join(e.ws, ".git")))
	}
	if out, err := e.gitTry("rev-parse", "--absolute-git-dir"); err == nil {
		e.t.Errorf("the host's git finds a repository in the workspace: %s", out)
	}
	marker := filepath.Join(e.home, "PWNED")
	e.gitTry("status")
	e.gitTry("log", "-1")
	if _, err := os.Lstat(marker); err == nil {
		e.t.Errorf("the host's git ran a command planted by the sandbox (it created %s)", marker)
		os.Remove(marker)
	}
}

func TestEscapeGitAbsent(t *testing.T) {
	// $NSB_HOST_HOME stands for each test's own home: what the host's git
	// would run there leaves PWNED in it.
	pwn := `touch "$NSB_HOST_HOME/PWNED"`
	for _, tt := range []struct{ name, script string }{
		{"git init", `git init -q`},
		{"git init and plant a hook", `git init -q; printf '#!/bin/sh\n` + pwn + `\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit`},
		{"mkdir and plant a hook", `mkdir -p .git/hooks && printf '#!/bin/sh\n` + pwn + `\n' > .git/hooks/pre-commit`},
		{"write a config", `mkdir -p .git && printf '[core]\n\tfsmonitor = "` + pwn + `; false"\n' > .git/config`},
		{"remove the placeholder", `rmdir .git && git init -q`},
		{"rename the placeholder", `mv .git x && git init -q`},
		{"gitdir file", `rmdir .git; echo "gitdir: /tmp/x" > .git`},
		{"separate git dir", `git init -q --separate-git-dir=/tmp/g`},
		// The workspace itself as a git directory: with no .git, the host's
		// git takes a directory holding HEAD, objects/ and refs/ for one,
		// and core.worktree gives it a work tree whose fsmonitor runs on
		// the next "git status".
		{"the workspace as a git directory", `git init -q --bare . && git config -f config core.bare false && git config -f config core.worktree "$PWD" && git config -f config core.fsmonitor "` + pwn + `; false"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.try(nil, strings.ReplaceAll(tt.script, "$NSB_HOST_HOME", e.home))
			e.noRepository()
		})
	}
	t.Run("over MCP", func(t *testing.T) {
		e := newEnv(t)
		s := e.serve()
		_, out := s.sh(t, `git init -q; mkdir -p .git/hooks; echo evil > .git/hooks/pre-commit`)
		if out.ExitCode == 0 {
			t.Errorf("planting a hook over MCP succeeded: %+v", out)
		}
		e.noRepository()
	})
}

func TestEscapeGitHooksPath(t *testing.T) {
	setup := func(t *testing.T) *env {
		e := newEnv(t)
		e.gitRepo()
		e.git("config", "core.hooksPath", ".husky/_")
		e.write(".husky/pre-commit", "npm test\n", 0o644)
		e.write(".husky/_/pre-commit", "#!/bin/sh\n. \"$(dirname \"$0\")/h\"\n", 0o755)
		e.write(".husky/_/h", "#!/bin/sh\nexit 0\n", 0o644)
		return e
	}

	t.Run("protected", func(t *testing.T) {
		e := setup(t)
		hooks := filepath.Join(e.ws, ".husky/_")
		before := snapshot(t, hooks)
		for _, tt := range []struct{ name, script string }{
			{"write a hook", `echo 'touch /tmp/pwned' >> .husky/_/pre-commit`},
			{"write the helper", `echo 'touch /tmp/pwned' >> .husky/_/h`},
			{"write a new hook", `printf '#!/bin/sh\ntouch /tmp/pwned\n' > .husky/_/post-checkout`},
			{"chmod a hook", `chmod 777 .husky/_/pre-commit`},
			{"rename the hooks dir", `mv .husky/_ .husky/x`},
			{"rename its parent", `mv .husky .husky.old && mkdir -p .husky/_ && echo evil > .husky/_/pre-commit`},
			{"remove it", `rm -rf .husky`},
		} {
			t.Run(tt.name, func(t *testing.T) {
				e := e.in(t)
				e.mustDeny(nil, tt.script)
				if got := snapshot(t, hooks); got != before {
					t.Errorf("hooks changed on the host:\n%s\nwant:\n%s", got, before)
				}
			})
		}
		// The hook that is not under core.hooksPath stays writable: it is
		// husky's source, run only through the protected one.
		e.mustAllow(nil, `echo 'npm run lint' >> .husky/pre-commit`)
	})

	t.Run("granted with --writable", func(t *testing.T) {
		e := setup(t)
		hooks := filepath.Join(e.ws, ".husky/_")
		e.mustAllow([]string{"--writable", hooks}, `echo '# changed' >> .husky/_/h`)
		if b, _ := os.ReadFile(filepath.Join(hooks, "h")); !strings.Contains(string(b), "# changed") {
			t.Errorf("with --writable, the write did not reach the host: %q", b)
		}
	})

	t.Run("absent hooks dir", func(t *testing.T) {
		e := setup(t)
		os.RemoveAll(filepath.Join(e.ws, ".husky/_"))
		e.mustDeny(nil, `mkdir -p .husky/_ && printf '#!/bin/sh\ntouch /tmp/pwned\n' > .husky/_/pre-commit`)
		if got := snapshot(t, filepath.Join(e.ws, ".husky/_")); got != "absent" {
			t.Errorf(".husky/_ after the call: %s, want absent (no placeholder left)", got)
		}
	})

	t.Run("absent hooks dir and parent", func(t *testing.T) {
		e := setup(t)
		os.RemoveAll(filepath.Join(e.ws, ".husky"))
		e.mustDeny(nil, `mkdir -p .husky/_ && printf '#!/bin/sh\ntouch /tmp/pwned\n' > .husky/_/pre-commit`)
		if got := snapshot(t, filepath.Join(e.ws, ".husky")); got != "absent" {
			t.Errorf(".husky after the call: %s, want absent (no placeholder left)", got)
		}
	})
}

// TestEscapeGitNestedRepository plants a repository below the workspace and
// registers it in the index as a submodule: the host's "git status" in the
// workspace then runs "git status" in it, which obeys its config. Its git
// directory is either in the work tree (sub/.git) or where git keeps
// submodules' (.git/modules/sub, one of the locations DESIGN.md §2.3 names).
func TestEscapeGitNestedRepository(t *testing.T) {
	for _, tt := range []struct{ name, init string }{
		{"in the work tree", `git init -q sub`},
		{"under .git/modules", `mkdir -p .git/modules && git init -q --separate-git-dir=.git/modules/sub sub`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.gitRepo()
			pwn := `touch ` + filepath.Join(e.home, "PWNED")
			e.try(nil, tt.init+` && git -C sub -c user.name=A -c user.email=a@example.com commit -q --allow-empty -m s &&
git -C sub config core.fsmonitor "`+pwn+`; false" && git add sub 2>/dev/null`)
			e.gitTry("status")
			if _, err := os.Lstat(filepath.Join(e.home, "PWNED")); err == nil {
				t.Errorf("the host's git status in the workspace ran a command planted in a nested repository's config")
			}
		})
	}
}

// TestEscapeGitWorktreeConfig: with extensions.worktreeConfig set, git reads
// .git/config.worktree too, whether or not it exists yet.
func TestEscapeGitWorktreeConfig(t *testing.T) {
	e := newEnv(t)
	e.gitRepo()
	e.git("config", "extensions.worktreeConfig", "true")
	pwn := `touch ` + filepath.Join(e.home, "PWNED")
	e.mustDeny(nil, `git config --worktree core.fsmonitor "`+pwn+`; false"`)
	e.gitTry("status")
	if _, err := os.Lstat(filepath.Join(e.home, "PWNED")); err == nil {
		t.Errorf("the host's git status ran a command planted in .git/config.worktree")
	}
	if got := snapshot(t, filepath.Join(e.ws, ".git/config.worktree")); got != "absent" {
		t.Errorf(".git/config.worktree after the call: %s, want absent", got)
	}
}

// TestEscapeGitSymlinkedDirs points .git/modules or .git/worktrees at a
// directory outside the workspace. .git/modules is protected whole, so the
// swap itself is denied; .git/worktrees (with no worktree in it) stays
// writable. The server reads the repository on the host before each call:
// it must not create anything through the symlink (the command cannot
// write outside the workspace, so neither may the server on its behalf),
// and later calls must still run.
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
			if dir == "modules" {
				e.mustDeny(nil, `rm -rf .git/`+dir+` && ln -s `+victim+` .git/`+dir)
			} else {
				e.mustAllow(nil, `rm -rf .git/`+dir+` && ln -s `+victim+` .git/`+dir)
			}
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

// TestEscapeGitNestedRepositoryQuarantine: a nested repository registered
// during a call is left alone when it runs nothing, and moved aside, with a
// note in the result, when its config would run a command.
func TestEscapeGitNestedRepositoryQuarantine(t *testing.T) {
	e := newEnv(t)
	e.gitRepo()
	s := e.serve()
	res, out := s.sh(t, `git init -q plain && git -C plain -c user.name=A -c user.email=a@example.com commit -q --allow-empty -m s && git add plain 2>/dev/null; echo done`)
	if res.IsError || out.Stdout != "done\n" || strings.Contains(text(res), "quarantined") {
		t.Fatalf("a plain nested repository: %q", text(res))
	}
	if _, err := os.Stat(filepath.Join(e.ws, "plain", ".git")); err != nil {
		t.Errorf("a plain nested repository was moved: %v", err)
	}
	pwn := `touch ` + filepath.Join(e.home, "PWNED")
	res, _ = s.sh(t, `git init -q evil && git -C evil -c user.name=A -c user.email=a@example.com commit -q --allow-empty -m s && git -C evil config core.fsmonitor "`+pwn+`; false" && git add evil 2>/dev/null; echo done`)
	if !strings.Contains(text(res), "evil/.git was moved to .git.quarantined-by-nanosandbox") || !strings.Contains(text(res), "core.fsmonitor") {
		t.Errorf("no quarantine note: %q", text(res))
	}
	if _, err := os.Stat(filepath.Join(e.ws, "evil", ".git.quarantined-by-nanosandbox", "config")); err != nil {
		t.Errorf("the quarantined repository is not where the note says: %v", err)
	}
	e.gitTry("status")
	if _, err := os.Lstat(filepath.Join(e.home, "PWNED")); err == nil {
		t.Errorf("the host's git status ran the planted command")
	}
	// Next call: the plain nested repository is now protected like the
	// workspace's own.
	e.mustDeny(nil, `echo '[core]' >> plain/.git/config`)
}
