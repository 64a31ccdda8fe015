package gitguard

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// plantRebase writes an interactive rebase stopped in git directory $d,
// with to-do list $todo: what git rebase -i leaves, made by hand.
const plantRebase = `mkdir "$d" && git rev-parse HEAD > "$d/orig-head" && cp "$d/orig-head" "$d/onto" && git symbolic-ref HEAD > "$d/head-name" &&
: > "$d/interactive" && : > "$d/done" && echo 1 > "$d/end" && echo 0 > "$d/msgnum" && printf '%s\n' "$todo" > "$d/git-rebase-todo"`

// threeCommits is a repository whose last commit, picked again onto its
// first, is no fast-forward: git merges it, with the strategy named.
const threeCommits = `git init -q && echo a > f && git add f && git commit -qm a && echo b >> f && git commit -qam b && echo c > g && git add g && git commit -qm c`

// strategyProgram plants, at the top of the work tree, what the strategy
// "/../x" leads to: git runs "git merge-/../x", and the dashed command
// "git-merge-/../x", holding a slash, is a path from the work tree.
const strategyProgram = `mkdir git-merge- && printf '#!/bin/sh\n%s\n' "$PWN" > x && chmod +x x`

// A command leaves an operation stopped in a git directory, for the user
// to go on with: what goes on runs what it planted. Each is moved aside.
func TestEndMovesPlantedOpStateAside(t *testing.T) {
	cont := [][]string{{"-c", "core.editor=true", "rebase", "--continue"}}
	for _, tt := range []planting{
		{name: "an interactive rebase with an exec line",
			setup:  "git init -q && git commit -q --allow-empty -m a && git commit -q --allow-empty -m b",
			attack: `d=.git/rebase-merge todo="exec $PWN" && ` + plantRebase,
			dirs:   []string{"."}, user: cont,
			note: `moved .git/rebase-merge aside to .git/rebase-merge.quarantined-by-nanosandbox: its rebase state .git/rebase-merge holds the to-do line "exec touch `},
		// An agent's own rebase --exec, stopped at a conflict in the call:
		// moved aside too (nothing tells it from a planted one), and the
		// note says how the repository is left.
		{name: "an agent's rebase --exec stopped at a conflict",
			setup:  `git init -q && echo a > f && git add f && git commit -qm a && git branch -m main && git checkout -qb topic && echo t > f && git commit -qam t && git checkout -q main && echo m > f && git commit -qam m && git checkout -q topic`,
			attack: `git rebase --exec "$PWN" main >/dev/null 2>&1; test -d .git/rebase-merge && echo resolved > f && git add f`,
			dirs:   []string{"."}, user: cont,
			note: `, which the user's own git rebase --continue (or --skip) would run outside the sandbox; HEAD stays where the operation stopped, and git rebase --abort or --continue has nothing to go on with; to go back to where it began: git checkout topic`},
		{name: "an exec line spelled x, after a harmless pick",
			setup:  "git init -q && git commit -q --allow-empty -m a && git commit -q --allow-empty -m b",
			attack: `d=.git/rebase-merge todo="$(printf '# a comment\nnoop\n  x\t%s' "$PWN")" && ` + plantRebase,
			dirs:   []string{"."}, user: cont,
			note: `holds the to-do line "x\t`},
		{name: "a rebase whose merge strategy is a planted program",
			setup:  threeCommits,
			attack: `c=$(git rev-parse HEAD) && git reset -q --hard HEAD~2 && d=.git/rebase-merge todo="pick $c" && ` + plantRebase + ` && echo /../x > "$d/strategy" && ` + strategyProgram,
			dirs:   []string{"."}, user: cont,
			note: `its rebase state .git/rebase-merge holds the merge strategy "/../x", which the user's own git rebase --continue (or --skip) would run outside the sandbox`},
		{name: "a cherry-pick whose merge strategy is a planted program",
			setup: threeCommits,
			attack: `c=$(git rev-parse HEAD) && git reset -q --hard HEAD~2 && mkdir .git/sequencer && git rev-parse HEAD > .git/sequencer/head &&
cp .git/sequencer/head .git/sequencer/abort-safety && printf 'pick %s c\npick %s c\n' $c $c > .git/sequencer/todo &&
git config -f .git/sequencer/opts options.strategy /../x && ` + strategyProgram,
			dirs: []string{"."}, user: [][]string{{"-c", "core.editor=true", "cherry-pick", "--continue"}},
			note: `its cherry-pick state .git/sequencer holds the merge strategy "/../x", which the user's own git cherry-pick --continue would run`},
		{name: "a linked worktree's interactive rebase",
			setup:  "git init -q && git commit -q --allow-empty -m a && git commit -q --allow-empty -m b && git worktree add -q wt",
			attack: `cd wt && d=../.git/worktrees/wt/rebase-merge todo="exec $PWN" && ` + plantRebase,
			dirs:   []string{"wt"}, user: cont,
			note: `moved .git/worktrees/wt/rebase-merge aside`},
		{name: "a rebase-merge in a repository the call made",
			attack: `git init -q && git commit -q --allow-empty -m a && d=.git/rebase-merge todo="exec $PWN" && ` + plantRebase,
			dirs:   []string{"."}, user: cont,
			note: `moved .git aside`},
	} {
		runWalks(t, tt.name, func(t *testing.T, walk bool) { testPlanted(t, tt, walk) })
	}
}

// git am goes on with options for git apply from rebase-apply/apply-opt:
// --build-fake-ancestor=PATH replaces the file at PATH, outside the
// roots, with an index.
func TestEndMovesPlantedOpStateApplyOptionsAside(t *testing.T) {
	const setup = `git init -q && echo a > f && git add f && git commit -qm a && git checkout -qb side && echo b > f && git commit -qam p1 &&
echo c > g && git add g && git commit -qm p2 && git format-patch -q -2 -o ../patches && git checkout -q - && echo z > f && git commit -qam z`
	// The user's git am stopped at the first patch's conflict; the
	// command resolves it, and plants the option.
	const attack = `echo b > f && git add f && printf "'--build-fake-ancestor=%s'" "$VICTIM" > .git/rebase-apply/apply-opt`
	for _, walk := range []bool{false, true} {
		t.Run(map[bool]string{false: "watching", true: "walking"}[walk], func(t *testing.T) {
			harmed := func(guard bool) (bool, []string) {
				f := newFixture(t)
				f.walk = walk
				victim := filepath.Join(f.home, "victim")
				if err := os.WriteFile(victim, []byte("the user's\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				f.sh(setup)
				f.sh("git am -q ../patches/*.patch >/dev/null 2>&1; test -d .git/rebase-apply")
				var notes []string
				if guard {
					f.start()
					notes = f.call(strings.ReplaceAll(attack, "$VICTIM", victim))
				} else {
					f.sh(strings.ReplaceAll(attack, "$VICTIM", victim))
				}
				f.sh("git -c core.editor=true am --continue >/dev/null 2>&1; true")
				b, _ := os.ReadFile(victim)
				return string(b) != "the user's\n", notes
			}
			checkHarm(t, harmed, `its rebase (or am) state .git/rebase-apply holds the git apply option "'--build-fake-ancestor=`)
		})
	}
}

// Honest operations stopped in one call and gone on with in the next, or
// the user's own stopped before the server started and gone on with in a
// call, are left alone: no note, nothing moved.
func TestHonestOpStateStays(t *testing.T) {
	const diverged = `git init -q && echo a > f && git add f && git commit -qm a && git branch -m main && git checkout -qb topic &&
echo topic > f && git commit -qam topic && echo t2 > g && git add g && git commit -qm t2 && git checkout -q main && echo main > f && git commit -qam main && git checkout -q topic`
	const resolve = `echo resolved > f && git add f && `
	for _, tt := range []struct {
		name  string
		setup string   // the user's, before the server starts
		calls []string // each one call
		left  string   // what the first call leaves, if any
	}{
		{name: "a conflicted rebase, continued in the next call", setup: diverged,
			calls: []string{`git rebase main >/dev/null 2>&1; test -d .git/rebase-merge`, resolve + `GIT_EDITOR=true git rebase --continue`},
			left:  ".git/rebase-merge"},
		{name: "a conflicted interactive rebase with a sequence editor", setup: diverged,
			calls: []string{`GIT_SEQUENCE_EDITOR="sed -i 2s/^pick/reword/" git rebase -i main >/dev/null 2>&1; test -d .git/rebase-merge`, resolve + `GIT_EDITOR=true git rebase --continue`},
			left:  ".git/rebase-merge"},
		{name: "the user's own rebase --exec, continued in a call",
			setup: `git init -q && git commit -q --allow-empty -m base && for i in 1 2 3; do echo $i >> u && git add u && git commit -qm u$i; done &&
GIT_SEQUENCE_EDITOR="sed -i s/^pick/edit/" git rebase -q -i --exec true HEAD~3`,
			calls: []string{`git rebase --continue >/dev/null 2>&1; grep -q '^exec true' .git/rebase-merge/git-rebase-todo`, `git rebase --continue && git rebase --continue && test ! -e .git/rebase-merge`},
			left:  ".git/rebase-merge"},
		{name: "a conflicted cherry-pick of two commits", setup: diverged + ` && git checkout -q main`,
			calls: []string{`git cherry-pick --strategy=ort -x topic~1 topic >/dev/null 2>&1; test -f .git/sequencer/opts`, resolve + `GIT_EDITOR=true git cherry-pick --continue`},
			left:  ".git/sequencer"},
		{name: "a conflicted rebase with strategy options", setup: diverged,
			calls: []string{`git rebase -s ort -X patience -X diff-algorithm=histogram -X find-renames=40 main >/dev/null 2>&1; grep -q patience .git/rebase-merge/strategy_opts`, resolve + `GIT_EDITOR=true git rebase --continue`},
			left:  ".git/rebase-merge"},
		{name: "a conflicted cherry-pick with strategy options", setup: diverged + ` && git checkout -q main`,
			calls: []string{`git cherry-pick -X patience -X ignore-space-change topic~1 topic >/dev/null 2>&1; grep -q strategy-option .git/sequencer/opts`, resolve + `GIT_EDITOR=true git cherry-pick --continue`},
			left:  ".git/sequencer"},
		{name: "a conflicted rebase on the apply backend, with its options", setup: diverged,
			calls: []string{`git rebase --apply --signoff -C1 main >/dev/null 2>&1; test -f .git/rebase-apply/0001`, resolve + `git rebase --continue`},
			left:  ".git/rebase-apply"},
		{name: "a conflicted git am of two patches", setup: diverged + ` && git format-patch -q -2 -o ../p && git checkout -q main`,
			calls: []string{`git am -3 --keep-cr ../p/*.patch >/dev/null 2>&1; test -f .git/rebase-apply/0002`, resolve + `git am --continue`},
			left:  ".git/rebase-apply"},
		{name: "git init's empty branches directory", setup: "git init -q && mkdir -p .git/branches",
			calls: []string{`git init -q sub && mkdir -p sub/.git/branches`}},
	} {
		runWalks(t, tt.name, func(t *testing.T, walk bool) {
			f := newFixture(t)
			f.walk = walk
			f.sh(tt.setup)
			f.start()
			for i, c := range tt.calls {
				if notes := f.call(c); len(notes) != 0 {
					t.Fatalf("call %d was judged: %q", i+1, notes)
				}
				if i == 0 && tt.left != "" {
					if _, err := os.Lstat(filepath.Join(f.root, tt.left)); err != nil {
						t.Fatalf("the first call left no %s: %v", tt.left, err)
					}
				}
			}
			if out := f.sh("ls -a .git"); strings.Contains(out, "quarantined") {
				t.Errorf("something was moved aside: %s", out)
			}
		})
	}
}

// A legacy remote file points the user's git push into another repository
// of theirs, outside the roots, when the config defines no URL for the
// remote. That repository's post-receive hook, the user's own, leaves the
// marker: it shows that the push got there.
func TestEndMovesPlantedRemotesAside(t *testing.T) {
	const other = `git init -q && git commit -q --allow-empty -m a && o=$(cd .. && pwd)/home/other.git && git init -q --bare "$o" &&
printf '#!/bin/sh\n%s\n' "$PWN" > "$o/hooks/post-receive" && chmod +x "$o/hooks/post-receive"`
	const o = `o=$(cd .. && pwd)/home/other.git && `
	push := [][]string{{"push", "-q"}}
	for _, tt := range []planting{
		{name: "remotes/origin with a push refspec", setup: other,
			attack: o + `mkdir -p .git/remotes && printf 'URL: %s\nPush: HEAD:refs/heads/planted\n' "$o" > .git/remotes/origin`,
			dirs:   []string{"."}, user: push,
			note: `moved .git/remotes aside to .git/remotes.quarantined-by-nanosandbox: its legacy remotes directory .git/remotes holds "origin", a remote the user's own git push`},
		{name: "branches/origin in git init's branches directory", setup: other + ` && mkdir -p .git/branches`,
			attack: o + `printf '%s#planted\n' "$o" > .git/branches/origin`,
			dirs:   []string{"."}, user: push,
			note: `moved .git/branches aside`},
		{name: "the user's remotes file rewritten", setup: other + ` && mkdir -p .git/remotes && echo 'URL: /nonexistent' > .git/remotes/origin`,
			attack: o + `printf 'URL: %s\nPush: HEAD:refs/heads/planted\n' "$o" > .git/remotes/origin`,
			dirs:   []string{"."}, user: push,
			note: `moved .git/remotes aside`},
	} {
		runWalks(t, tt.name, func(t *testing.T, walk bool) { testPlanted(t, tt, walk) })
	}
}

// Options for the merge strategy: git's scripted strategies (resolve,
// octopus) hand them to git read-tree, where --index-output=PATH writes an
// index at PATH, outside the roots, when the user's git goes on.
func TestEndMovesPlantedStrategyOptionsAside(t *testing.T) {
	// The commit the operation picks, after the branch went back to the
	// first: no fast-forward, so the strategy runs.
	const back = `c=$(git rev-parse HEAD) && git reset -q --hard HEAD~2 && `
	for _, tt := range []struct {
		name   string
		attack string
		user   []string
		note   string
	}{
		{name: "a rebase's strategy_opts",
			attack: back + `d=.git/rebase-merge todo="pick $c" && ` + plantRebase + ` && echo resolve > "$d/strategy" && printf ' --index-output=%s\n' "$VICTIM" > "$d/strategy_opts"`,
			user:   []string{"-c", "core.editor=true", "rebase", "--continue"},
			note:   `its rebase state .git/rebase-merge holds the merge strategy option "index-output=`},
		{name: "a rebase's strategy_opts, quoted as git quotes",
			attack: back + `d=.git/rebase-merge todo="pick $c" && ` + plantRebase + ` && echo resolve > "$d/strategy" && printf '"--index-output=%s"\n' "$VICTIM" > "$d/strategy_opts"`,
			user:   []string{"-c", "core.editor=true", "rebase", "--continue"},
			note:   `holds the merge strategy option "index-output=`},
		{name: "a cherry-pick's strategy-option",
			attack: back + `mkdir .git/sequencer && git rev-parse HEAD > .git/sequencer/head && cp .git/sequencer/head .git/sequencer/abort-safety &&
printf 'pick %s c\npick %s c\n' $c $c > .git/sequencer/todo && git config -f .git/sequencer/opts options.strategy resolve &&
git config -f .git/sequencer/opts options.strategy-option "index-output=$VICTIM"`,
			user: []string{"-c", "core.editor=true", "cherry-pick", "--continue"},
			note: `its cherry-pick state .git/sequencer holds the merge strategy option "index-output=`},
	} {
		runWalks(t, tt.name, func(t *testing.T, walk bool) {
			harmed := func(guard bool) (bool, []string) {
				f := newFixture(t)
				f.walk = walk
				victim := filepath.Join(f.home, "victim")
				if err := os.WriteFile(victim, []byte("the user's\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				f.sh(threeCommits)
				attack := strings.ReplaceAll(tt.attack, "$VICTIM", victim)
				var notes []string
				if guard {
					f.start()
					notes = f.call(attack)
				} else {
					f.sh(attack)
				}
				cmd := exec.Command(f.git, append([]string{"-C", f.root}, tt.user...)...)
				cmd.Env = f.env()
				cmd.Run()
				b, _ := os.ReadFile(victim)
				return string(b) != "the user's\n", notes
			}
			checkHarm(t, harmed, tt.note)
		})
	}
}

// An entry git keeps no file as, made in a state directory by a call, is
// not taken for inert: git's readers are known by name, and a file this
// guard does not know could be read by one it misses.
func TestEndMovesUnknownOpStateEntriesAside(t *testing.T) {
	for _, walk := range []bool{false, true} {
		f := newFixture(t)
		f.walk = walk
		f.sh("git init -q && git commit -q --allow-empty -m a && git commit -q --allow-empty -m b")
		f.start()
		notes := f.call(`d=.git/rebase-merge todo="pick $(git rev-parse HEAD)" && ` + plantRebase + ` && echo x > "$d/hook-me"`)
		if want := `its rebase state .git/rebase-merge holds an entry git does not write there, "hook-me"`; !strings.Contains(strings.Join(notes, "\n"), want) {
			t.Errorf("walk=%v: notes %q, want one containing %q", walk, notes, want)
		}
	}
}

// A planted MERGE_RR names a file outside the roots: the user's next git
// commit runs rerere, which finds no conflict in it and copies it into
// rr-cache, where the next command reads it. (A planted rr-cache turns
// rerere on.)
func TestEndMovesPlantedRerereRecordAside(t *testing.T) {
	const plant = `id=$(printf '%040d' 7) && mkdir -p "${c:-$g}/rr-cache/$id" && printf '%s\t%s\0' $id "$SECRET" > "$g/MERGE_RR"`
	for _, tt := range []struct {
		name, setup, attack, dir, note string
	}{
		{name: "by an absolute path", setup: userRepo,
			attack: `g=.git && ` + plant,
			note:   `moved .git/MERGE_RR aside to .git/MERGE_RR.quarantined-by-nanosandbox: its rerere record .git/MERGE_RR was made or changed by a call`},
		{name: "by a path from the work tree", setup: userRepo,
			attack: `g=.git && SECRET=../home/secret && ` + plant,
			note:   `moved .git/MERGE_RR aside`},
		{name: "of a linked worktree", setup: userRepo + ` && git worktree add -q wt`,
			attack: `g=.git/worktrees/wt c=.git && ` + plant, dir: "wt",
			note: `moved .git/worktrees/wt/MERGE_RR aside`},
		{name: "in a repository the call made",
			attack: `git init -q sub && git -C sub commit -q --allow-empty -m s && g=sub/.git && ` + plant, dir: "sub",
			note: `moved sub/.git aside`},
	} {
		runWalks(t, tt.name, func(t *testing.T, walk bool) {
			leaked := func(guard bool) (bool, []string) {
				f := newFixture(t)
				f.walk = walk
				secret := filepath.Join(f.home, "secret")
				if err := os.WriteFile(secret, []byte("TOPSECRET\n"), 0o600); err != nil {
					t.Fatal(err)
				}
				if tt.setup != "" {
					f.sh(tt.setup)
				}
				attack := `SECRET="` + secret + `" && ` + tt.attack
				var notes []string
				if guard {
					f.start()
					notes = f.call(attack)
				} else {
					f.sh(attack)
				}
				cmd := exec.Command(f.git, "-C", filepath.Join(f.root, tt.dir), "commit", "-q", "--allow-empty", "-m", "user")
				cmd.Env = f.env()
				cmd.Run()
				out, _ := exec.Command("grep", "-rl", "TOPSECRET", f.root).Output()
				return len(out) > 0, notes
			}
			checkHarm(t, leaked, tt.note)
		})
	}
}

// The price, with rerere on: a merge's conflicts met in a call are not
// remembered, and the note says so; the merge itself goes on as ever.
func TestHonestMergeWithRerere(t *testing.T) {
	f := newFixture(t)
	f.sh(`git init -q && git config rerere.enabled true && echo a > f && git add f && git commit -qm a && git checkout -qb side && echo b > f && git commit -qam b && git checkout -q - && echo c > f && git commit -qam c`)
	f.start()
	notes := f.call(`git merge -q side >/dev/null 2>&1; test -f .git/MERGE_RR`)
	if want := "the conflicts of a merge made in a call are not remembered by rerere"; len(notes) != 1 || !strings.Contains(notes[0], want) {
		t.Fatalf("notes %q, want one containing %q", notes, want)
	}
	if notes := f.call(`echo resolved > f && git add f && git commit -q --no-edit`); len(notes) != 0 {
		t.Errorf("the merge's end was judged: %q", notes)
	}
	if out := f.sh(`git log --merges --format=%s`); !strings.Contains(out, "Merge branch 'side'") {
		t.Errorf("no merge commit: %q", out)
	}
}

// TestTodoControlCharacters: a to-do line holding a terminal escape, a
// carriage return inside or another control character is a risk (git
// status prints it as it is); tabs, a CR ending the line and UTF-8 text
// are not.
func TestTodoControlCharacters(t *testing.T) {
	for _, tt := range []struct {
		todo string
		risk bool
	}{
		{"pick 0123abc a commit\npick 4567def \tanother\r\n# comment\n", false},
		{"pick 0123abc caf\u00e9 \u4e2d\u6587\n", false},
		{"pick 0123abc \x1b]52;c;ZWNobwo=\x07\x1b[2J All clean\n", true},
		{"pick 0123abc x\rfake\n", true},
		{"# \x1b[31mred\n", true},
		{"pick 0123abc \u009b2J\n", true},
		{"pick 0123abc \x7f\n", true},
	} {
		if got := len(todoRisks([]byte(tt.todo))) > 0; got != tt.risk {
			t.Errorf("todoRisks(%q) = %v, want %v", tt.todo, todoRisks([]byte(tt.todo)), tt.risk)
		}
	}
}
