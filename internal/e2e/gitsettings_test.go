package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The user's global git config is hidden with the home, but what of it
// changes how git treats a work tree reaches the sandbox's git: the files
// the user ignores everywhere (an agent's git add -A must not commit .env),
// the default branch, filters; its secrets (a token in url.*.insteadOf, a
// credential helper) do not. A git config --global inside writes the
// private home's ~/.gitconfig and wins, as on the host.
func TestGitGlobalSettingsCarried(t *testing.T) {
	const token = "ghp_SECRETTOKEN1234"
	for _, mode := range []string{"files", "includes"} {
		t.Run(mode, func(t *testing.T) {
			e := plantEnv(t)
			global := identity + "[core]\n\texcludesFile = ~/.gitignore_global\n\tattributesFile = ~/.gitattributes_global\n[init]\n\tdefaultBranch = trunk\n" +
				"[filter \"upper\"]\n\tclean = tr a-z A-Z\n\tsmudge = cat\n[url \"https://x:" + token + "@github.com/\"]\n\tinsteadOf = https://github.com/\n" +
				"[credential]\n\thelper = store --file ~/.creds-" + token + "\n"
			if mode == "includes" {
				// git itself is asked where the config includes another file.
				e.write(filepath.Join(e.home, ".gitconfig-more"), global, 0o644)
				global = "[include]\n\tpath = ~/.gitconfig-more\n"
			}
			e.write(filepath.Join(e.home, ".gitconfig"), global, 0o644)
			e.write(filepath.Join(e.home, ".gitignore_global"), ".env\n*.log\n", 0o644)
			e.write(filepath.Join(e.home, ".gitattributes_global"), "*.ipynb filter=upper\n", 0o644)
			e.gitRepo()
			e.write(".env", "API_KEY=1\n", 0o644)
			e.write("app.log", "x\n", 0o644)
			if out, _ := e.gitTry("status", "--porcelain"); out != "" {
				t.Fatalf("control: the user's git shows %q, want nothing (ignored)", out)
			}
			script := func(fresh string) string {
				return `git status --porcelain; git init -q ` + fresh + ` && git -C ` + fresh + ` symbolic-ref HEAD; git config --get filter.upper.clean; ` +
					`cat ~/.config/git/config ~/.config/git/ignore; git check-attr filter -- x.ipynb; git config --global core.pager less && git config --global core.pager`
			}
			check := func(t *testing.T, stdout string) {
				for _, want := range []string{"refs/heads/trunk\n", "tr a-z A-Z\n", "less\n", "x.ipynb: filter: upper\n"} {
					if !strings.Contains(stdout, want) {
						t.Errorf("stdout %q lacks %q", stdout, want)
					}
				}
				if strings.Contains(stdout, "?? .env") || strings.Contains(stdout, "?? app.log") {
					t.Errorf("the user's globally ignored files show inside: %q", stdout)
				}
				if strings.Contains(stdout, token) || strings.Contains(stdout, "helper") || strings.Contains(stdout, "insteadof") {
					t.Errorf("a secret of the global config reached the sandbox: %q", stdout)
				}
			}
			t.Run("one-shot", func(t *testing.T) {
				stdout, stderr, code := e.sh(script("fresh1"))
				if code != 0 {
					t.Fatalf("exit %d: %s", code, stderr)
				}
				check(t, stdout)
			})
			t.Run("mcp", func(t *testing.T) {
				s := e.serve()
				_, out := s.sh(t, script("fresh2"))
				check(t, out.Stdout)
			})
		})
	}
}

// The private home is a command's to write: what a command leaves where
// the server writes the carried settings (a FIFO, a symlink leading out of
// the private home) neither blocks the next start nor leads its writes out.
func TestGitGlobalSettingsHostilePrivateHome(t *testing.T) {
	e := plantEnv(t)
	e.write(filepath.Join(e.home, ".gitconfig"), identity+"[init]\n\tdefaultBranch = trunk\n", 0o644)
	outside := filepath.Join(e.home, "outside")
	for _, plant := range []string{
		`mkdir -p ~/.config/git && rm -f ~/.config/git/config && mkfifo ~/.config/git/config`,
		`rm -rf ~/.config/git && ln -s ` + outside + ` ~/.config/git`,
		`rm -rf ~/.config && ln -s ` + outside + ` ~/.config`,
		`rm -rf ~/.config && mkdir -p ~/.config && : > ~/.config/git`,
	} {
		if _, stderr, code := e.sh(plant); code != 0 {
			t.Fatalf("%s: exit %d: %s", plant, code, stderr)
		}
		stdout, stderr, code := e.sh("git config --get init.defaultBranch || echo none")
		if code != 0 || stdout != "trunk\n" {
			t.Errorf("after %q the next start: exit %d, %q: %s", plant, code, stdout, stderr)
		}
		t.Logf("after %q: %q %q", plant, stdout, stderr)
		if fi, err := os.Lstat(outside); err == nil {
			t.Errorf("after %q the server wrote outside the private home: %v", plant, fi.Mode())
		}
	}
}

// The hooks of the user's global core.hooksPath (a secret scanner) run on
// the commits made inside too: shown read-only from the hidden home.
func TestGitGlobalHooksRunInside(t *testing.T) {
	e := plantEnv(t)
	hooks := filepath.Join(e.home, ".githooks-global")
	e.write(filepath.Join(e.home, ".gitconfig"), identity+"[core]\n\thooksPath = ~/.githooks-global\n", 0o644)
	e.write(filepath.Join(hooks, "pre-commit"), "#!/bin/sh\nif git diff --cached | grep -q AKIA; then echo 'refused: an AWS key' >&2; exit 1; fi\n", 0o755)
	e.gitRepo()
	e.write("leak.txt", "AKIAABCDEFGHIJKLMNOP\n", 0o644)
	if out, err := e.gitTry("add", "leak.txt"); err != nil {
		t.Fatal(out)
	}
	if out, err := e.gitTry("commit", "-qm", "leak"); err == nil || !strings.Contains(out, "refused: an AWS key") {
		t.Fatalf("control: the user's global hook did not refuse the commit on the host: %v %s", err, out)
	}
	s := e.serve()
	res, out := s.sh(t, `git commit -qm leak; echo rc=$?; echo x >> ~/.githooks-global/pre-commit; echo w=$?`)
	if !strings.Contains(out.Stdout, "rc=1") || !strings.Contains(out.Stderr, "refused: an AWS key") {
		t.Errorf("the user's global hook did not run inside: %s", text(res))
	}
	if strings.Contains(out.Stdout, "w=0") {
		t.Errorf("the user's global hooks are writable inside: %s", text(res))
	}
}
