package gitguard

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCanonicalAsTheKernel checks that paths read from a writable root are
// resolved where the kernel would open them: ".." after a symlink climbs
// from the symlink's target, never from its text.
func TestCanonicalAsTheKernel(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"p/q", "p/c", "s"} {
		os.MkdirAll(filepath.Join(dir, d), 0o755)
	}
	os.WriteFile(filepath.Join(dir, "f"), nil, 0o644)
	os.Symlink("../p/q", filepath.Join(dir, "s/L"))
	os.Symlink(filepath.Join(dir, "p/q"), filepath.Join(dir, "s/A"))
	os.Symlink("L", filepath.Join(dir, "s/LL"))
	os.Symlink("loop2", filepath.Join(dir, "s/loop1"))
	os.Symlink("loop1", filepath.Join(dir, "s/loop2"))
	for _, tt := range []struct {
		in, want string // want "" for an error
	}{
		{"s/L/../c", "p/c"},
		{"s/LL/../c", "p/c"},
		{"s/A/../c/config", "p/c/config"},
		{"s/L/../../s/./L", "p/q"},
		{"s/../p/q", "p/q"},
		{"s/none/x", "s/none/x"},
		{"s/L/none/x", "p/q/none/x"},
		{"s/none/../c", ""},
		{"f/../p", ""},
		{"f/x", "f/x"},
		{"s/loop1/x", ""},
		{"../../../../../../../../proc/self/cwd", ""},
	} {
		got, err := canonical(dir + "/" + tt.in)
		switch {
		case tt.want == "" && err == nil:
			t.Errorf("%s: got %s, want an error", tt.in, got)
		case tt.want != "" && err != nil:
			t.Errorf("%s: %v", tt.in, err)
		case tt.want != "" && got != filepath.Join(dir, tt.want):
			t.Errorf("%s: got %s, want %s", tt.in, got, filepath.Join(dir, tt.want))
		}
	}
}

// Each redirection a command writes is followed as git follows it: a
// symlink then "..", which read lexically leads somewhere else, harmless.
func TestSymlinkThenDotDot(t *testing.T) {
	for _, tt := range []struct {
		name, attack, note string
	}{
		{"commondir",
			`git init -q sub && mkdir -p p/q p/c && mv sub/.git/objects sub/.git/refs p/c/ && cp sub/.git/config p/c/config &&
git config -f p/c/config core.fsmonitor "$PWN" && mkdir p/c/hooks && ln -s ../../p/q sub/.git/L && echo "L/../c" > sub/.git/commondir &&
git add sub 2>/dev/null; true`,
			"moved sub/.git aside"},
		{"gitfile into a repository outside",
			`mkdir -p sub/.husky/_ && ln -s "$(cd ../other && pwd)/src" sub/L && printf 'gitdir: L/../.git\n' > sub/.git &&
printf '#!/bin/sh\n%s\n' "$PWN" > sub/.husky/_/pre-commit && chmod +x sub/.husky/_/pre-commit`,
			"moved sub/.git aside to sub/.git.quarantined-by-nanosandbox: it points outside the writable roots"},
		{"commondir ending in CR LF",
			`git init -q sub && mkdir c && mv sub/.git/objects sub/.git/refs c/ && mkdir sub/.git/refs &&
printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tfsmonitor = "%s"\n' "$PWN" > c/config && printf '../../c\r\n' > sub/.git/commondir`,
			"moved sub/.git aside"},
		{"include",
			`git init -q sub && mkdir -p p/q && printf '[core]\n\tfsmonitor = "%s"\n' "$PWN" > p/inc && ln -s ../../p/q sub/.git/L && git -C sub config include.path L/../inc`,
			"moved sub/.git aside"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// The user's other project, outside the roots, husky-style.
			setup := "git init -q && git init -q ../other && git -C ../other config core.hooksPath .husky/_ && mkdir ../other/src && git -C ../other commit -q --allow-empty -m o"
			testPlanted(t, planting{name: tt.name, setup: setup, attack: tt.attack, note: tt.note, dirs: []string{"sub"}}, false)
		})
	}
}

// The workspace is a package of the user's monorepo, whose husky hooks
// (core.hooksPath) lie in the workspace: they are protected during calls,
// and a hook a call plants there is moved aside.
func TestEnclosingRepositoryHooksPath(t *testing.T) {
	setup := func(f *fixture) {
		parent := filepath.Dir(f.root)
		for _, args := range [][]string{{"init", "-q", parent}, {"-C", parent, "config", "core.hooksPath", "ws/.husky/_"}} {
			cmd := exec.Command(f.git, args...)
			cmd.Env = f.env()
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v\n%s", args, err, out)
			}
		}
		os.MkdirAll(filepath.Join(f.root, ".husky/_"), 0o755)
	}
	const attack = `printf '#!/bin/sh\n%s\n' "$PWN" > .husky/_/pre-commit && chmod +x .husky/_/pre-commit`
	ctl := newFixture(t)
	setup(ctl)
	ctl.sh(attack)
	if !ctl.userGit("..") {
		t.Fatal("control: the planted hook does not run")
	}
	f := newFixture(t)
	setup(f)
	g := f.start()
	c, err := g.Begin()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range c.Protect {
		if p.Path == filepath.Join(f.root, ".husky/_") && p.Dir {
			found = true
		}
	}
	if !found {
		t.Errorf("the enclosing repository's hooks directory is not protected: %+v", c.Protect)
	}
	f.sh(attack) // as if the protection had not held (Config.Unmounted)
	notes := c.End()
	if f.userGit("..") {
		t.Errorf("the planted hook ran: %q", notes)
	}
	if !strings.Contains(strings.Join(notes, "\n"), "holds pre-commit") {
		t.Errorf("notes %q", notes)
	}
	// The user's own commit in the monorepo, between calls: nothing said.
	cmd := exec.Command(f.git, "-C", filepath.Dir(f.root), "commit", "-q", "--allow-empty", "-m", "u")
	cmd.Env = f.env()
	cmd.Run()
	if more := f.call(""); len(more) != 0 {
		t.Errorf("the next call noted %q", more)
	}
}

// A path through /proc/self means the server's own process to the guard
// and git's to git: a gitfile into /proc/self/cwd, with the server started
// in the workspace, names the harmless workspace root to the guard and,
// for git run in sub, sub/L: the user's other project, whose relative
// hooks path then lies in sub. Such a path is judged unreadable.
func TestPerProcessPathsAreOdd(t *testing.T) {
	const setup = "git init -q && git init -q ../other && git -C ../other config core.hooksPath .husky/_ && git -C ../other commit -q --allow-empty -m o"
	const attack = `mkdir -p sub/.husky/_ && ln -s "$(cd ../other && pwd)" sub/L && printf 'gitdir: /proc/self/cwd/L/.git\n' > sub/.git &&
printf '#!/bin/sh\n%s\n' "$PWN" > sub/.husky/_/pre-commit && chmod +x sub/.husky/_/pre-commit`
	ctl := newFixture(t)
	ctl.sh(setup)
	ctl.sh(attack)
	if !ctl.userGit("sub") {
		t.Fatal("control: the planting does not run")
	}
	f := newFixture(t)
	f.sh(setup)
	f.start()
	t.Chdir(f.root) // the server's cwd, as when it is started in the workspace
	notes := f.call(attack)
	if f.userGit("sub") {
		t.Errorf("the planted hook ran: %q", notes)
	}
	if !strings.Contains(strings.Join(notes, "\n"), "moved sub/.git aside") {
		t.Errorf("notes %q", notes)
	}
}

// A config that is a symlink takes its relative includes from its own
// directory, as git opened it, not its target's: the user's global config
// symlinked into a dotfiles workspace includes a file beside the link,
// and a repository's config symlinked elsewhere includes one in .git.
func TestSymlinkedConfigIncludes(t *testing.T) {
	for _, tt := range []struct {
		name   string
		setup  func(f *fixture)
		attack string
	}{
		// ~/.gitconfig -> ws/gitconfig, which includes "ws/local.inc":
		// from ~, where git opened it.
		{"global", func(f *fixture) {
			// The home holds the workspace, a dotfiles repository.
			f.home = filepath.Dir(f.root)
			f.cfg.Home, f.cfg.GlobalConfigs = f.home, []string{filepath.Join(f.home, ".gitconfig")}
			f.sh(`printf '[include]\n\tpath = ws/local.inc\n' > gitconfig && git init -q`)
			os.Symlink(filepath.Join(f.root, "gitconfig"), filepath.Join(f.home, ".gitconfig"))
		}, `printf '[core]\n\tfsmonitor = "%s"\n' "$PWN" > local.inc`},
		// .git/config -> ../conf/c, which includes "inc": .git/inc.
		{"repository", func(f *fixture) {
			f.sh(`git init -q && mkdir conf && mv .git/config conf/c && ln -s ../conf/c .git/config && printf '[include]\n\tpath = inc\n' >> conf/c`)
		}, `printf '[core]\n\tfsmonitor = "%s"\n' "$PWN" > .git/inc`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctl := newFixture(t)
			tt.setup(ctl)
			ctl.sh(tt.attack)
			if !ctl.userGit(".") {
				t.Fatal("control: the planted include does not run")
			}
			f := newFixture(t)
			tt.setup(f)
			f.start()
			notes := f.call(tt.attack)
			if f.userGit(".") {
				t.Errorf("the planted include ran: %q", notes)
			}
		})
	}
}

// A directory whose name is longer than PATH_MAX, which git cannot work
// in, is left out of the scan: it must not break the guard (every later
// call refused), as 17 mkdirs of long names did.
func TestTooDeepForGit(t *testing.T) {
	for _, walk := range []bool{false, true} {
		f := newFixture(t)
		f.walk = walk
		f.sh("git init -q")
		f.start()
		deep := `n=0; while [ $n -lt 16 ]; do d=$(printf "%0250d" $n); mkdir $d && cd $d || exit 1; n=$((n+1)); done; mkdir $(printf "%070d" 0)`
		notes := f.call(deep)
		if _, err := f.g.Begin(); err != nil {
			t.Fatalf("walk %v: the next call is refused: %v (notes %q)", walk, err, notes)
		}
	}
}

// A linked worktree's git directory planted in the user's repository,
// whose gitdir names a directory outside: git worktree repair would write
// a .git file there, git worktree remove --force delete it. It is moved
// aside, and repair writes nothing outside.
func TestLinkedWorktreeOutside(t *testing.T) {
	const plant = `git commit -q --allow-empty -m u && mkdir -p .git/worktrees/x && echo ../.. > .git/worktrees/x/commondir &&
git rev-parse HEAD > .git/worktrees/x/HEAD && GITDIR > .git/worktrees/x/gitdir`
	for _, tt := range []struct{ name, gitdir string }{
		{"absolute", `echo "$OUT/.git"`},
		// Git drops trailing white space, and "/.git" if it is there:
		// L itself is the work tree.
		{"a trailing space and no /.git", `ln -s "$OUT" L && printf '%s/L \n' "$PWD"`},
		// Read from the work tree's top by git 2.39, from the git
		// directory by others: not judged, moved aside.
		{"relative", `echo ../outside/.git`},
	} {
		for _, guarded := range []bool{false, true} {
			testLinkedWorktree(t, tt.name, strings.ReplaceAll(plant, "GITDIR", tt.gitdir), guarded)
		}
	}
}

func testLinkedWorktree(t *testing.T, name, plant string, guarded bool) {
	f := newFixture(t)
	out := filepath.Join(filepath.Dir(f.root), "outside")
	os.Mkdir(out, 0o755)
	f.sh("git init -q")
	script := strings.ReplaceAll(plant, "$OUT", out)
	var notes []string
	if guarded {
		f.start()
		notes = f.call(script)
	} else {
		f.sh(script)
	}
	cmd := exec.Command(f.git, "-C", f.root, "worktree", "repair")
	cmd.Env = f.env()
	cmd.Run()
	_, err := os.Lstat(filepath.Join(out, ".git"))
	switch {
	case !guarded && err != nil:
		t.Fatalf("%s: control: git worktree repair wrote nothing outside; the planting tests nothing", name)
	case guarded && err == nil:
		t.Errorf("%s: git worktree repair wrote %s/.git; notes %q", name, out, notes)
	case guarded && !strings.Contains(strings.Join(notes, "\n"), "moved .git/worktrees/x/gitdir aside"):
		t.Errorf("%s: notes %q", name, notes)
	}
}

// A symlink a command puts in the way of a trusted repository's own
// redirection (husky's relative core.hooksPath, absent after git clean)
// is moved aside, not the repository: one that loops, one that leads to
// another project's hooks outside, and one in the way of a repository
// that holds the workspace.
func TestPlantedSymlinkOnTrustedRedirection(t *testing.T) {
	const other = `git init -q ../other && mkdir -p ../other/.husky/_ && printf '#!/bin/sh\n%s\n' "$PWN" > ../other/.husky/_/pre-commit && chmod +x ../other/.husky/_/pre-commit`
	for _, tt := range []struct {
		name, setup, attack, dir string
		control                  bool // the attack runs code unguarded
	}{
		{"a loop", "git init -q && git config core.hooksPath .husky/_", "ln -s .husky .husky", ".", false},
		{"to another project's hooks", "git init -q && git config core.hooksPath .husky/_ && " + other,
			`ln -s "$(cd ../other && pwd)/.husky" .husky`, ".", true},
		{"in the way of a repository holding the workspace", "git init -q .. && git -C .. config core.hooksPath ws/.husky/_ && " + other,
			`ln -s "$(cd ../other && pwd)/.husky" .husky`, "..", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.control {
				ctl := newFixture(t)
				ctl.sh(tt.setup)
				ctl.sh(tt.attack)
				if !ctl.userGit(tt.dir) {
					t.Fatal("control: the hooks do not run")
				}
			}
			f := newFixture(t)
			f.sh(tt.setup)
			f.start()
			notes := f.call(tt.attack)
			if f.userGit(tt.dir) {
				t.Errorf("hooks ran: %q", notes)
			}
			if !strings.Contains(strings.Join(notes, "\n"), "moved .husky aside") {
				t.Errorf("notes %q, want .husky moved aside", notes)
			}
			if _, err := os.Lstat(filepath.Join(f.root, tt.dir, ".git")); err != nil {
				t.Errorf("the user's repository is gone: %v", err)
			}
			if _, err := f.g.Begin(); err != nil {
				t.Errorf("the next call is refused: %v", err)
			}
		})
	}
}

// Symlinks on the user's own redirection: one the user made is kept, one
// a call made goes (B2); and a new repository's hooks, found through the
// user's relative global core.hooksPath, that a symlink leads to another
// project's are not run (B3).
func TestPlantedLinksOnly(t *testing.T) {
	const other = `git init -q ../other && mkdir -p ../other/.husky/_ ../other/.githooks && printf '#!/bin/sh\n%s\n' "$PWN" > ../other/.husky/_/pre-commit &&
cp ../other/.husky/_/pre-commit ../other/.githooks/ && chmod +x ../other/.husky/_/pre-commit ../other/.githooks/pre-commit`
	t.Run("the user's own symlink stays", func(t *testing.T) {
		setup := "git init -q && git config core.hooksPath .husky/_ && mkdir hk && ln -s hk .husky && " + other
		attack := `ln -s "$(cd ../other && pwd)/.husky/_" hk/_`
		ctl := newFixture(t)
		ctl.sh(setup)
		ctl.sh(attack)
		if !ctl.userGit(".") {
			t.Fatal("control: the hooks do not run")
		}
		f := newFixture(t)
		f.sh(setup)
		time.Sleep(1100 * time.Millisecond) // older than the calls' second of slack
		f.start()
		notes := f.call(attack)
		if f.userGit(".") {
			t.Errorf("hooks ran: %q", notes)
		}
		if _, err := os.Lstat(filepath.Join(f.root, ".husky")); err != nil {
			t.Errorf("the user's own .husky symlink was moved: %v (notes %q)", err, notes)
		}
		if !strings.Contains(strings.Join(notes, "\n"), "moved hk/_ aside") {
			t.Errorf("notes %q, want hk/_ moved aside", notes)
		}
	})
	t.Run("a new repository through the user's global hooks path", func(t *testing.T) {
		attack := `git init -q sub && ln -s "$(cd ../other && pwd)/.githooks" sub/.githooks`
		var fs []*fixture
		for range 2 {
			f := newFixture(t)
			os.WriteFile(filepath.Join(f.home, ".gitconfig"), []byte("[core]\n\thooksPath = .githooks\n"), 0o644)
			f.sh("git init -q && " + other)
			fs = append(fs, f)
		}
		fs[0].sh(attack)
		if !fs[0].userGit("sub") {
			t.Fatal("control: the hooks do not run")
		}
		f := fs[1]
		f.start()
		notes := f.call(attack)
		if f.userGit("sub") {
			t.Errorf("hooks ran: %q", notes)
		}
	})
}
