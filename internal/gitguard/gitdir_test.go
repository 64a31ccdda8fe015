package gitguard

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// An entry git keeps no such entry as, made at the top of a git directory
// in a call, is moved aside by itself when it ends (git instaweb runs
// gitweb/lighttpd there); the user's own stay while unchanged, and one a
// call changes below is moved aside too. What git writes there stays.
func TestEndMovesStrayGitdirEntriesAside(t *testing.T) {
	for _, walk := range []bool{false, true} {
		t.Run(map[bool]string{false: "watched", true: "walked"}[walk], func(t *testing.T) {
			f := newFixture(t)
			f.walk = walk
			f.sh(userRepo + ` && mkdir -p .git/gk/cache && echo user > .git/gk/cache/state && git worktree add -q wt`)
			f.start()
			// Honest git, everything it keeps at the top: a merge
			// stopped at a conflict, a bisect, notes, a stash, gc.
			honest := `git commit -q --allow-empty -m b && git stash list && git notes add -m n && git gc -q &&
git checkout -qb t && echo t > f && git add f && git commit -qm t && git checkout -q - && echo m > f && git add f && git commit -qm m &&
(git merge t >/dev/null 2>&1 || true) && git merge --abort && git bisect start && git bisect good HEAD~1 && git bisect bad HEAD && git bisect reset >/dev/null &&
git -C wt commit -q --allow-empty -m w && printf 'main\n  topic\n' > .git/machete && mkdir -p .git/patches/main && : > .git/patches/main/series`
			if notes := f.call(honest); len(notes) != 0 {
				t.Fatalf("honest git was judged: %q", notes)
			}
			notes := f.call(`mkdir .git/gitweb && printf '#!/bin/sh\n%s\n' "$PWN" > .git/gitweb/lighttpd && chmod +x .git/gitweb/lighttpd && echo x > .git/worktrees/wt/extra`)
			all := strings.Join(notes, "\n")
			for _, want := range []string{`moved .git/gitweb aside to .git/gitweb.quarantined-by-nanosandbox: it is "gitweb" in the git directory .git, an entry git does not keep there`,
				`moved .git/worktrees/wt/extra aside`} {
				if !strings.Contains(all, want) {
					t.Errorf("notes %q, want one holding %q", notes, want)
				}
			}
			if _, err := os.Stat(filepath.Join(f.root, ".git/gk/cache/state")); err != nil {
				t.Errorf("the user's own entry went: %v", err)
			}
			// The user's own, changed below by a call: a tool's state
			// the command rewrote is no longer the user's.
			notes = f.call(`echo planted > .git/gk/cache/state`)
			if !strings.Contains(strings.Join(notes, "\n"), `moved .git/gk aside`) {
				t.Errorf("notes %q, want .git/gk moved aside", notes)
			}
			if notes := f.call(""); len(notes) != 0 {
				t.Errorf("a call after it was judged: %q", notes)
			}
		})
	}
}

// A stopped rebase whose step counts are not numbers: git reads them with
// strtol, and its own prompt puts them into the shell's prompt as they
// are, where $(...) runs as the prompt is drawn. Moved aside.
func TestEndMovesRebaseCountsThatAreNotNumbersAside(t *testing.T) {
	prompt := "/usr/lib/git-core/git-sh-prompt"
	if _, err := os.Stat(prompt); err != nil {
		t.Skipf("needs git's prompt script at %s", prompt)
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("needs bash")
	}
	const plant = `mkdir .git/rebase-merge && git symbolic-ref HEAD > .git/rebase-merge/head-name && printf '%s\n' '$(touch "$MARK")' > .git/rebase-merge/msgnum && echo 2 > .git/rebase-merge/end`
	// drawPrompt draws the prompt as bash does in PROMPT_COMMAND mode:
	// __git_ps1 sets PS1, and bash expands it.
	drawPrompt := func(f *fixture) bool {
		os.Remove(f.marker)
		cmd := exec.Command(bash, "-c", `. `+prompt+` && __git_ps1 "\u" "\\\$ " && eval "p=\"$PS1\""`)
		cmd.Dir = f.root
		cmd.Env = append(f.env(), "MARK="+f.marker)
		cmd.Run()
		_, err := os.Lstat(f.marker)
		return err == nil
	}
	ctl := newFixture(t)
	ctl.sh(userRepo)
	ctl.sh(plant)
	if !drawPrompt(ctl) {
		t.Fatal("control: the prompt ran nothing; the test tests nothing")
	}
	f := newFixture(t)
	f.sh(userRepo)
	f.start()
	notes := f.call(plant)
	if !strings.Contains(strings.Join(notes, "\n"), `moved .git/rebase-merge aside`) || !strings.Contains(strings.Join(notes, "\n"), `"msgnum"`) {
		t.Errorf("notes %q, want the rebase state moved aside for msgnum", notes)
	}
	if drawPrompt(f) {
		t.Error("the user's prompt ran what the call planted")
	}
}

// An alternates file a call writes, naming a repository the sandbox hides
// (in the home): the user's git fsck --lost-found copies that repository's
// dangling objects into the workspace. Moved aside; one naming a store in
// the roots or a read-only grant stays (git clone --reference, --shared).
func TestEndMovesAlternatesOutsideAside(t *testing.T) {
	const priv = `git init -q "$HOME/priv" && echo PRIVATE-WIP > "$HOME/priv/w" && git -C "$HOME/priv" add w && git -C "$HOME/priv" rm -q --cached w`
	lostFound := func(f *fixture) bool {
		cmd := exec.Command(f.git, "-C", f.root, "fsck", "--lost-found")
		cmd.Env = f.env()
		cmd.Run()
		out, _ := exec.Command("sh", "-c", "cat "+f.root+"/.git/lost-found/other/* 2>/dev/null").Output()
		return strings.Contains(string(out), "PRIVATE-WIP")
	}
	ctl := newFixture(t)
	ctl.sh(userRepo)
	ctl.sh(priv)
	ctl.sh(`echo "$HOME/priv/.git/objects" > .git/objects/info/alternates`)
	if !lostFound(ctl) {
		t.Fatal("control: the hidden repository's objects did not land in the workspace; the test tests nothing")
	}
	for _, walk := range []bool{false, true} {
		t.Run(map[bool]string{false: "watched", true: "walked"}[walk], func(t *testing.T) {
			f := newFixture(t)
			f.walk = walk
			f.sh(userRepo)
			f.sh(priv)
			f.start()
			// A clone with a reference to a repository in the roots.
			if notes := f.call(`git clone -q --reference . . c && git -C c status --porcelain`); len(notes) != 0 {
				t.Fatalf("a clone --reference in the roots was judged: %q", notes)
			}
			notes := f.call(`echo "$HOME/priv/.git/objects" > .git/objects/info/alternates`)
			if !strings.Contains(strings.Join(notes, "\n"), "moved .git/objects/info/alternates aside") {
				t.Errorf("notes %q, want the alternates file moved aside", notes)
			}
			if lostFound(f) {
				t.Error("the hidden repository's objects landed in the workspace")
			}
		})
	}
}

// The chain of alternates, as git reads it: a store in the workspace
// whose own info/alternates names a hidden repository, and a store
// allowed once and later swapped for a symlink to one, are each judged.
func TestEndJudgesTheWholeAlternatesChain(t *testing.T) {
	const priv = `git init -q "$HOME/priv" && echo PRIVATE-WIP > "$HOME/priv/w" && git -C "$HOME/priv" add w && git -C "$HOME/priv" rm -q --cached w`
	lostFound := func(f *fixture) bool {
		cmd := exec.Command(f.git, "-C", f.root, "fsck", "--lost-found")
		cmd.Env = f.env()
		cmd.Run()
		out, _ := exec.Command("sh", "-c", "cat "+f.root+"/.git/lost-found/other/* 2>/dev/null").Output()
		return strings.Contains(string(out), "PRIVATE-WIP")
	}
	for _, tt := range []struct {
		name  string
		calls []string
	}{
		{"nested", []string{`mkdir -p build/cache/info && echo "$HOME/priv/.git/objects" > build/cache/info/alternates && echo ../../build/cache > .git/objects/info/alternates`}},
		{"nested later", []string{`mkdir -p build/cache/info && echo ../../build/cache > .git/objects/info/alternates`,
			`echo "$HOME/priv/.git/objects" > build/cache/info/alternates`}},
		{"six files deep", []string{`for i in 1 2 3 4 5; do mkdir -p build/c$i/info; done && echo ../../build/c1 > .git/objects/info/alternates &&
for i in 1 2 3 4; do echo ../c$((i+1)) > build/c$i/info/alternates; done && echo "$HOME/priv/.git/objects" > build/c5/info/alternates`}},
		{"swapped for a symlink", []string{`mkdir -p build/objcache && echo ../../build/objcache > .git/objects/info/alternates`,
			`rmdir build/objcache && ln -s "$HOME/priv/.git/objects" build/objcache`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctl := newFixture(t)
			ctl.sh(userRepo)
			ctl.sh(priv)
			for _, c := range tt.calls {
				ctl.sh(c)
			}
			if !lostFound(ctl) {
				t.Fatal("control: the hidden repository's objects did not land in the workspace; the test tests nothing")
			}
			for _, walk := range []bool{false, true} {
				f := newFixture(t)
				f.walk = walk
				f.sh(userRepo)
				f.sh(priv)
				f.start()
				var notes []string
				for _, c := range tt.calls {
					notes = append(notes, f.call(c)...)
				}
				if !strings.Contains(strings.Join(notes, "\n"), "moved .git/objects/info/alternates aside") {
					t.Errorf("walk=%v: notes %q, want the alternates file moved aside", walk, notes)
				}
				if lostFound(f) {
					t.Errorf("walk=%v: the hidden repository's objects landed in the workspace", walk)
				}
			}
		})
	}
}

// A stray entry too large to read is judged by itself, not at the cost of
// the git directory that holds it; git subtree's cache is git's own.
func TestStrayEntryTooLargeToRead(t *testing.T) {
	f := newFixture(t)
	f.sh(userRepo)
	f.start()
	big := `mkdir -p .git/D && cd .git/D && seq 1 10001 | xargs touch`
	if notes := f.call(strings.ReplaceAll(big, "/D", "/subtree-cache")); len(notes) != 0 {
		t.Errorf("git subtree's cache was judged: %q", notes)
	}
	notes := f.call(strings.ReplaceAll(big, "/D", "/junk"))
	if all := strings.Join(notes, "\n"); !strings.Contains(all, "moved .git/junk aside") || strings.Contains(all, "moved .git aside") {
		t.Errorf("notes %q, want .git/junk moved aside, and only it", notes)
	}
	if _, err := os.Stat(filepath.Join(f.root, ".git", "HEAD")); err != nil {
		t.Errorf("the repository went: %v", err)
	}
}

// BISECT_START is where git bisect reset goes back to: an option there
// ("-f") would throw the user's changes away; a branch name stays.
func TestBisectStartMustBeAName(t *testing.T) {
	f := newFixture(t)
	f.sh(userRepo + " && git commit -q --allow-empty -m b")
	f.start()
	if notes := f.call(`git bisect start -q 2>/dev/null || git bisect start >/dev/null; git bisect good HEAD~1 >/dev/null; git bisect bad HEAD >/dev/null`); len(notes) != 0 {
		t.Fatalf("an honest bisect was judged: %q", notes)
	}
	notes := f.call(`echo -f > .git/BISECT_START`)
	if !strings.Contains(strings.Join(notes, "\n"), "moved .git/BISECT_START aside") {
		t.Errorf("notes %q, want BISECT_START moved aside", notes)
	}
}

// An alternates chain that names one store over and over, itself
// included: each store is walked once, and the walk is bounded.
func TestAlternatesWalkIsBounded(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "s")
	os.MkdirAll(filepath.Join(store, "info"), 0o755)
	var b strings.Builder
	for range 16 {
		b.WriteString(store + "\n")
	}
	os.WriteFile(filepath.Join(store, "info", "alternates"), []byte(b.String()), 0o644)
	n := 0
	began := time.Now()
	walkAlternates(dir, []byte(b.String()), 0, func(string) bool { return true }, func(altStore) { n++ })
	if n != 1 || time.Since(began) > time.Second {
		t.Errorf("%d stores visited in %v, want the one once", n, time.Since(began))
	}
	var many strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&many, "%s/x%d\n", dir, i)
	}
	n, odd := 0, 0
	walkAlternates(dir, []byte(many.String()), 0, nil, func(s altStore) {
		n++
		if s.odd != "" {
			odd++
		}
	})
	if n != maxAlternateStores+1 || odd != 1 {
		t.Errorf("%d visits, %d odd: want %d, then one odd", n, odd, maxAlternateStores+1)
	}
}

// The user's global core.hooksPath lying in a root (a dotfiles checkout
// as the workspace) is every repository's hooks directory, on the host
// too: kept and judged though no repository in the roots names it, also
// where the setting comes from an included file.
func TestGlobalHooksPathInARoot(t *testing.T) {
	for _, include := range []bool{false, true} {
		t.Run(map[bool]string{false: "in the global config", true: "from an include"}[include], func(t *testing.T) {
			f := newFixture(t)
			hooks := filepath.Join(f.root, "dotfiles", "hooks")
			cfg := "[core]\n\thooksPath = " + hooks + "\n"
			if include {
				os.WriteFile(filepath.Join(f.home, "more.gitconfig"), []byte(cfg), 0o644)
				cfg = "[include]\n\tpath = more.gitconfig\n"
			}
			os.WriteFile(filepath.Join(f.home, ".gitconfig"), []byte(cfg), 0o644)
			os.MkdirAll(filepath.Join(f.root, "dotfiles"), 0o755)
			f.start()
			notes := f.call(`mkdir -p dotfiles/hooks && printf '#!/bin/sh\n%s\n' "$PWN" > dotfiles/hooks/pre-commit && chmod +x dotfiles/hooks/pre-commit`)
			if !strings.Contains(strings.Join(notes, "\n"), "moved dotfiles/hooks aside") {
				t.Errorf("notes %q, want the planted global hooks directory moved aside", notes)
			}
			if _, err := os.Stat(filepath.Join(hooks, "pre-commit")); err == nil {
				t.Error("the planted hook is in the user's global hooks directory")
			}
		})
	}
}

// A nanosandbox-mcp package a call leaves in a root's node_modules is what
// the user's next npx -y nanosandbox-mcp, started there, would run outside
// the sandbox: moved aside. One the user installed stays while calls
// leave it as it is.
func TestLauncherPlantedInARoot(t *testing.T) {
	f := newFixture(t)
	f.start()
	notes := f.call(`mkdir -p node_modules/nanosandbox-mcp/bin node_modules/.bin && echo '{"name":"nanosandbox-mcp","bin":"bin/x"}' > node_modules/nanosandbox-mcp/package.json && ln -s ../nanosandbox-mcp/bin/x node_modules/.bin/nanosandbox-mcp`)
	all := strings.Join(notes, "\n")
	for _, want := range []string{"moved node_modules/nanosandbox-mcp aside", "moved node_modules/.bin/nanosandbox-mcp aside"} {
		if !strings.Contains(all, want) {
			t.Errorf("notes %q, want one holding %q", notes, want)
		}
	}
	// The user's own, installed while no call ran.
	f.sh(`rm -rf node_modules && mkdir -p node_modules/nanosandbox-mcp && echo '{}' > node_modules/nanosandbox-mcp/package.json`)
	if notes := f.call("true"); len(notes) != 0 {
		t.Errorf("the user's own package was judged: %q", notes)
	}
	if notes := f.call(`echo planted > node_modules/nanosandbox-mcp/package.json`); !strings.Contains(strings.Join(notes, "\n"), "moved node_modules/nanosandbox-mcp aside") {
		t.Errorf("a change to it in a call: notes %q", notes)
	}
}

// 100,001 entries at the top of a trusted git directory, more than the
// guard reads: the user's repository stays where it is, and the note says
// what to do.
func TestGitdirTooLargeToList(t *testing.T) {
	f := newFixture(t)
	f.sh(userRepo)
	f.start()
	notes := f.call(`cd .git && seq 1 100001 | sed 's/^/junk-/' | xargs touch`)
	if _, err := os.Stat(filepath.Join(f.root, ".git", "HEAD")); err != nil {
		t.Fatalf("the repository went: %v (notes %q)", err, notes)
	}
	if !strings.Contains(strings.Join(notes, "\n"), "tell the user to remove those git does not keep there") {
		t.Errorf("notes %q", notes)
	}
}
