package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Redirections a command writes that mean one place to git and another
// when read as text: a symlink then "..", which the kernel takes from the
// symlink's target. Found by a red-team run.
var redirectPlantAttacks = []plantAttack{
	{name: "a commondir through a symlink and ..", setup: userRepo,
		steps: []string{`git init -q sub && git -C sub commit -q --allow-empty -m s && mkdir -p p/q p/c &&
mv sub/.git/objects sub/.git/refs p/c/ && cp sub/.git/config p/c/config && git config -f p/c/config core.fsmonitor "$PWN" &&
mkdir p/c/hooks && ln -s ../../p/q sub/.git/L && echo "L/../c" > sub/.git/commondir && git add sub`},
		dirs: []string{"sub"}},
	{name: "a gitfile through a symlink and .. into another project of the user's",
		setup: func(e *env) {
			// The user's other project, husky-style, outside the
			// workspace (in the home, which the sandbox hides).
			other := filepath.Join(e.home, "other")
			os.MkdirAll(filepath.Join(other, "src"), 0o755)
			e.own(other)
			e.own(filepath.Join(other, "src"))
			userRepo(e)
			for _, args := range [][]string{{"init", "-q", other}, {"-C", other, "config", "core.hooksPath", ".husky/_"}} {
				if out, err := e.gitTry(args...); err != nil {
					e.t.Fatalf("git %v: %v\n%s", args, err, out)
				}
			}
		},
		steps: []string{`mkdir -p sub/.husky/_ && ln -s "$OTHER/src" sub/L && printf 'gitdir: L/../.git\n' > sub/.git &&
printf '#!/bin/sh\n%s\n' "$PWN" > sub/.husky/_/pre-commit && chmod +x sub/.husky/_/pre-commit`},
		dirs: []string{"sub"}},
	{name: "a gitfile through /proc/self/cwd, the server's cwd to it and git's to git",
		setup: func(e *env) {
			other := filepath.Join(e.home, "other")
			os.MkdirAll(other, 0o755)
			e.own(other)
			userRepo(e)
			for _, args := range [][]string{{"init", "-q", other}, {"-C", other, "config", "core.hooksPath", ".husky/_"}} {
				if out, err := e.gitTry(args...); err != nil {
					e.t.Fatalf("git %v: %v\n%s", args, err, out)
				}
			}
		},
		steps: []string{`mkdir -p sub/.husky/_ && ln -s "$OTHER" sub/L && printf 'gitdir: /proc/self/cwd/L/.git\n' > sub/.git &&
printf '#!/bin/sh\n%s\n' "$PWN" > sub/.husky/_/pre-commit && chmod +x sub/.husky/_/pre-commit`},
		dirs: []string{"sub"}},
	{name: "a commondir ending in CR LF", setup: userRepo,
		steps: []string{`git init -q sub && git -C sub commit -q --allow-empty -m s && mkdir c && mv sub/.git/objects sub/.git/refs c/ && mkdir sub/.git/refs &&
printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tfsmonitor = "%s"\n' "$PWN" > c/config && printf '../../c\r\n' > sub/.git/commondir && git add sub`},
		dirs: []string{"sub"}},
	{name: "hooks of a repository that holds the workspace (a monorepo's package, with husky)",
		setup: func(e *env) {
			for _, args := range [][]string{{"init", "-q", e.home}, {"-C", e.home, "config", "core.hooksPath", "proj/.husky/_"}} {
				if out, err := e.gitTry(args...); err != nil {
					e.t.Fatalf("git %v: %v\n%s", args, err, out)
				}
			}
			e.write(".husky/_/h", "#!/bin/sh\n", 0o755)
		},
		steps: []string{`printf '#!/bin/sh\n%s\n' "$PWN" > .husky/_/pre-commit; chmod +x .husky/_/pre-commit`},
		dirs:  []string{".."}},
	{name: "a directory hidden from the scan, readable but not searchable", setup: userRepo,
		steps: []string{`git init -q d/sub && git -C d/sub config core.fsmonitor "$PWN" && chmod 600 d`},
		dirs:  []string{"d/sub"}},
}

func TestEscapeGitPlantedRedirect(t *testing.T) {
	for _, tt := range redirectPlantAttacks {
		t.Run(tt.name, func(t *testing.T) { runPlantAttack(t, tt) })
	}
}

// TestEscapeGitWorktreeOutside: a repository whose core.worktree leads out
// of the workspace makes the user's own git write there (checkout,
// restore, reset, stash) and delete there (clean). A planted one is moved
// aside; the control, planted on the host, writes the file outside.
func TestEscapeGitWorktreeOutside(t *testing.T) {
	// The commit holds .bashrc; the work tree is moved to the victim
	// directory, so that the user's "git restore ." writes it there.
	plant := func(victim string) string {
		return `git init -q b && mkdir "$TMPDIR/wt" && echo 'echo planted' > "$TMPDIR/wt/.bashrc" &&
git -C b --work-tree="$TMPDIR/wt" add .bashrc && git -C b --work-tree="$TMPDIR/wt" commit -q -m x &&
git -C b config core.worktree "` + victim + `"`
	}
	for _, form := range []string{"absolute", "relative"} {
		t.Run(form, func(t *testing.T) {
			for _, mode := range []string{"control", "one-shot", "mcp"} {
				t.Run(mode, func(t *testing.T) {
					e := plantEnv(t)
					e.gitRepo()
					victim := filepath.Join(e.home, "victim")
					e.write(filepath.Join(victim, "precious"), "mine\n", 0o644)
					v := victim
					if form == "relative" {
						rel, err := filepath.Rel(filepath.Join(e.ws, "b/.git"), victim)
						if err != nil {
							t.Fatal(err)
						}
						v = rel
					}
					script := "TMPDIR=${TMPDIR:-/tmp}; " + plant(v)
					var said string
					switch mode {
					case "control":
						tmp := t.TempDir()
						e.own(tmp)
						e.hostSh("TMPDIR=" + tmp + "; " + plant(v))
					case "one-shot":
						_, stderr, _ := e.sh(script)
						said = stderr
					case "mcp":
						res, _ := e.serve().sh(t, script)
						said = text(res)
					}
					out, _ := e.gitTry("-C", filepath.Join(e.ws, "b"), "restore", ".")
					_, err := os.Lstat(filepath.Join(victim, ".bashrc"))
					wrote := err == nil
					if mode == "control" {
						if !wrote {
							t.Fatalf("planted on the host, the user's git restore wrote nothing outside: the attack tests nothing (%s)", out)
						}
						return
					}
					if wrote {
						t.Errorf("the user's git restore wrote .bashrc outside the workspace; the call said %q", said)
					}
					if !strings.Contains(said, "moved b/.git aside") {
						t.Errorf("the call said %q, want b/.git moved aside", said)
					}
				})
			}
		})
	}
}

// TestEscapeGitConfigWorktreeStandIn: a config.worktree written into the
// user's repository during a call (one that moves the work tree out) is
// refused, so the user's repository is neither moved aside nor redirected.
func TestEscapeGitConfigWorktreeStandIn(t *testing.T) {
	const plant = `printf '[core]\n\tworktree = /usr\n' > .git/config.worktree`
	for _, mode := range []string{"one-shot", "mcp"} {
		t.Run(mode, func(t *testing.T) {
			e := plantEnv(t)
			e.gitRepo()
			var said string
			if mode == "one-shot" {
				out, stderr, _ := e.sh(plant)
				said = out + stderr
			} else {
				res, _ := e.serve().sh(t, plant)
				said = text(res)
			}
			if !strings.Contains(said, "Read-only file system") {
				t.Errorf("the write was not refused: %q", said)
			}
			if out, err := e.gitTry("log", "-1", "--format=%s"); err != nil || strings.TrimSpace(out) != "initial" {
				t.Errorf("the user's repository after the call: %q %v", out, err)
			}
			if _, err := os.Lstat(filepath.Join(e.ws, ".git/config.worktree")); err == nil {
				t.Error("config.worktree is left in the user's repository")
			}
		})
	}
}
