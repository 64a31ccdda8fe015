package e2e

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// setVar sets the server's variable name to value in e, or removes it if
// value is "".
func (e *env) setVar(name, value string) {
	var vars []string
	for _, kv := range e.vars {
		if !strings.HasPrefix(kv, name+"=") {
			vars = append(vars, kv)
		}
	}
	if value != "" {
		vars = append(vars, name+"="+value)
	}
	e.vars = vars
}

// getVar returns the value of the server's variable name in e.
func (e *env) getVar(name string) string {
	for _, kv := range e.vars {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	return ""
}

// TestHostGitNotPlanted: the server runs git on the host, outside any
// sandbox, where the user's git config needs git itself to be read (the
// workspace's .git is a "gitdir:" file, the config has an include). The
// server's PATH often names a directory commands can write: a project's
// .venv/bin, when the client was started with the venv active. A git a
// command planted there never runs on the host; the identity still comes
// from the real git, and reaches commands.
func TestHostGitNotPlanted(t *testing.T) {
	realGit, err := exec.LookPath("git")
	if err != nil {
		t.Skip("needs git on the host")
	}
	if realGit, err = filepath.EvalSymlinks(realGit); err != nil {
		t.Fatal(err)
	}
	const want = "Real Name|real@example.com"
	const user = "[user]\n\tname = Real Name\n\temail = real@example.com\n"
	for _, tt := range []struct {
		name  string
		setup func(e *env)
	}{
		// A command can make the workspace's .git a gitdir: file itself.
		{"gitfile made by a command", func(e *env) {
			e.write(filepath.Join(e.home, ".gitconfig"), user, 0o644)
			if out, stderr, code := e.sh(`mkdir -p .venv && git init -q --separate-git-dir="$PWD/.venv/.g" . && cat .git`); code != 0 || !strings.HasPrefix(out, "gitdir: ") {
				e.t.Fatalf("git init --separate-git-dir inside: exit %d %q %s", code, out, stderr)
			}
		}},
		{"include in GIT_CONFIG_GLOBAL", func(e *env) {
			e.write(filepath.Join(e.home, ".gitconfig"), "[include]\n\tpath = identity.inc\n", 0o644)
			e.write(filepath.Join(e.home, "identity.inc"), user, 0o644)
		}},
		// includeIf gitdir: matches only where git runs in the workspace.
		{"includeIf gitdir in XDG_CONFIG_HOME", func(e *env) {
			xdg := filepath.Join(e.home, "xdg")
			e.setVar("GIT_CONFIG_GLOBAL", "")
			e.setVar("XDG_CONFIG_HOME", xdg)
			e.write(filepath.Join(xdg, "git", "config"), fmt.Sprintf("[user]\n\tname = Other\n[includeIf \"gitdir:%s/\"]\n\tpath = work.inc\n", e.ws), 0o644)
			e.write(filepath.Join(xdg, "git", "work.inc"), user, 0o644)
			e.git("init", "-q")
		}},
	} {
		for _, form := range []string{"one-shot", "server"} {
			t.Run(tt.name+"/"+form, func(t *testing.T) {
				e := newEnv(t)
				tt.setup(e)
				marker := filepath.Join(t.TempDir(), "planted-git-ran")
				// Planted by a command, as it would be; it passes on to
				// the real git, so that nothing looks wrong.
				script := fmt.Sprintf(`mkdir -p .venv/bin && printf '#!/bin/sh\necho "ran $*" >> %s\nexec %s "$@"\n' > .venv/bin/git && chmod +x .venv/bin/git`, marker, realGit)
				if out, stderr, code := e.sh(script); code != 0 {
					t.Fatalf("planting: exit %d %s%s", code, out, stderr)
				}
				e.setVar("PATH", filepath.Join(e.ws, ".venv", "bin")+":"+e.getVar("PATH"))
				const show = `printf '%s|%s' "$GIT_AUTHOR_NAME" "$GIT_AUTHOR_EMAIL"`
				var got string
				if form == "one-shot" {
					out, stderr, code := e.run(nil, "sh", "-c", show)
					if code != 0 {
						t.Fatalf("exit %d %s%s", code, out, stderr)
					}
					got = out
				} else {
					s := e.serve()
					_, out := s.sh(t, show)
					got = out.Stdout
					s.Close()
					s.cmd.Wait()
				}
				if b, err := os.ReadFile(marker); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("the planted git ran on the host: %q %v", b, err)
				}
				if got != want {
					t.Errorf("the command's identity is %q, want %q (from the real git)", got, want)
				}
			})
		}
	}
}

// TestHostGitOfAnotherServer: another server of the user's, on another
// workspace, writes where this one's commands do not; a git one of its
// commands planted in a directory on PATH (a tools repository's bin/) is
// not this server's to run, at start nor after a call that makes a
// repository (which the git guard judges with the host's git).
func TestHostGitOfAnotherServer(t *testing.T) {
	realGit, err := exec.LookPath("git")
	if err != nil {
		t.Skip("needs git on the host")
	}
	if realGit, err = filepath.EvalSymlinks(realGit); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	e.write(filepath.Join(e.home, ".gitconfig"), "[include]\n\tpath = identity.inc\n", 0o644)
	e.write(filepath.Join(e.home, "identity.inc"), "[user]\n\tname = Real Name\n\temail = real@example.com\n", 0o644)
	marker := filepath.Join(t.TempDir(), "planted-git-ran")
	// Server A's workspace: the user's tools repository, whose bin/ is on
	// PATH; A's command planted git there.
	tools := filepath.Join(e.home, "tools")
	e.write(filepath.Join(tools, "bin", "git"), fmt.Sprintf("#!/bin/sh\necho \"ran $*\" >> %s\nexec %s \"$@\"\n", marker, realGit), 0o755)
	e.setVar("PATH", filepath.Join(tools, "bin")+":"+e.getVar("PATH"))
	// The system's temporary directory is where this test's files are:
	// elsewhere, as on most machines, so that the tools lie outside it.
	tmp := filepath.Join(e.home, ".tmp")
	if err := os.MkdirAll(tmp, 0o777); err != nil {
		t.Fatal(err)
	}
	e.setVar("TMPDIR", tmp)
	s := e.serve()
	res, out := s.sh(t, `git init -q x && git -C x config core.pager less; printf '%s' "$GIT_AUTHOR_NAME"`)
	if b, err := os.ReadFile(marker); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("another server's planted git ran on the host: %q %v", b, err)
	}
	if out.Stdout != "Real Name" || !strings.Contains(text(res), "moved x/.git aside") {
		t.Errorf("want the identity from the real git and the repository judged by it: %s", text(res))
	}
}
