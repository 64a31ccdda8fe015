package gitguard

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// userRepo is the user's repository, with a commit and a reflog.
const userRepo = `git init -q && git commit -q --allow-empty -m a`

// A symbolic link a command makes inside a git directory, through which the
// user's own git would later write outside the roots, is removed when the
// call ends: the user's commit, checkout, fetch or gc then writes in the
// repository. $OUT is a directory of the user's outside the roots; the
// planting got through when anything appears in it.
func TestLinksInGitDirectoriesAreRemoved(t *testing.T) {
	for _, tt := range []struct {
		name   string
		setup  string   // the user's, before the server starts
		calls  []string // the commands', one call each
		dir    string   // where the user runs git
		user   [][]string
		remove string // in the last call's notes
	}{
		{name: "COMMIT_EDITMSG", setup: userRepo,
			calls: []string{`ln -sf "$OUT/x" .git/COMMIT_EDITMSG`},
			user:  [][]string{{"commit", "-q", "--allow-empty", "-m", "user"}}, remove: ".git/COMMIT_EDITMSG"},
		{name: "a reflog, into a shell's rc", setup: userRepo,
			calls: []string{`rm .git/logs/HEAD && ln -s "$OUT/bashrc" .git/logs/HEAD && git branch 'a;touch${IFS}x;#' && git symbolic-ref HEAD 'refs/heads/a;touch${IFS}x;#'`},
			user:  [][]string{{"checkout", "-q", "master"}}, remove: ".git/logs/HEAD"},
		{name: "FETCH_HEAD", setup: userRepo,
			calls: []string{`ln -s "$OUT/x" .git/FETCH_HEAD`},
			user:  [][]string{{"fetch", "-q", ".", "master"}}, remove: ".git/FETCH_HEAD"},
		{name: "the reflog directory", setup: userRepo,
			calls: []string{`rm -r .git/logs/refs && ln -s "$OUT" .git/logs/refs`},
			user:  [][]string{{"checkout", "-q", "-b", "newbranch"}}, remove: ".git/logs/refs"},
		{name: "the pack directory", setup: userRepo,
			calls: []string{`rmdir .git/objects/pack && ln -s "$OUT" .git/objects/pack`},
			user:  [][]string{{"gc", "-q"}}, remove: ".git/objects/pack"},
		{name: "rerere's cache, which turns rerere on", setup: userRepo + ` && echo a > f && git add f && git commit -qm f && git checkout -qb side && echo b > f && git commit -qam b && git checkout -q master && echo c > f && git commit -qam c`,
			calls: []string{`ln -s "$OUT" .git/rr-cache`},
			user:  [][]string{{"merge", "-q", "side"}}, remove: ".git/rr-cache"},
		{name: "in a repository the call makes",
			calls: []string{`git init -q sub && git -C sub commit -q --allow-empty -m s && ln -sf "$OUT/x" sub/.git/COMMIT_EDITMSG`},
			dir:   "sub", user: [][]string{{"commit", "-q", "--allow-empty", "-m", "user"}}, remove: "sub/.git/COMMIT_EDITMSG"},
		{name: "in a directory moved into the git directory", setup: userRepo,
			calls: []string{`mkdir d && ln -s "$OUT/x" d/HEAD && rm -r .git/logs && mv d .git/logs`},
			user:  [][]string{{"commit", "-q", "--allow-empty", "-m", "user"}}, remove: ".git/logs/HEAD"},
		// Renaming sets a link's change time: an old link of the user's,
		// from the work tree, is as new as one made now.
		{name: "an old link of the user's moved in", setup: userRepo + ` && ln -s "$OUT/x" old`,
			calls: []string{`mv old .git/COMMIT_EDITMSG`},
			user:  [][]string{{"commit", "-q", "--allow-empty", "-m", "user"}}, remove: ".git/COMMIT_EDITMSG"},
		// Made where no git directory was, and left there by a first
		// call; a second makes the directory a git directory.
		{name: "a directory that becomes a git directory later", setup: userRepo,
			calls: []string{
				`git init -q w && mv w/.git r && printf 'gitdir: ../r\n' > w/.git && git -C w commit -q --allow-empty -m w && rm r/logs/HEAD r/HEAD && ln -s "$OUT/x" r/logs/HEAD`,
				`echo 'ref: refs/heads/master' > r/HEAD`},
			dir: "w", user: [][]string{{"commit", "-q", "--allow-empty", "-m", "user"}}, remove: "r/logs/HEAD"},
	} {
		runWalks(t, tt.name, func(t *testing.T, walk bool) {
			t.Parallel()
			run := func(guarded bool) (bool, []string) {
				f := newFixture(t)
				f.walk = walk
				out := filepath.Join(f.home, "out")
				os.Mkdir(out, 0o755)
				expand := func(s string) string { return strings.ReplaceAll(s, "$OUT", out) }
				if tt.setup != "" {
					f.sh(expand(tt.setup))
				}
				var notes []string
				if guarded {
					f.start()
				}
				for i, c := range tt.calls {
					if i > 0 {
						// Past the poll's settling: the second
						// call's end reads only what changed.
						time.Sleep(settle + 100*time.Millisecond)
					}
					if guarded {
						notes = f.call(expand(c))
					} else {
						f.sh(expand(c))
					}
				}
				// What the command wrote there itself, a sandbox
				// would have refused: only the user's git counts.
				os.RemoveAll(out)
				os.Mkdir(out, 0o755)
				for _, args := range tt.user {
					cmd := exec.Command(f.git, append([]string{"-C", filepath.Join(f.root, tt.dir)}, args...)...)
					cmd.Env = f.env()
					cmd.Run()
				}
				ents, _ := os.ReadDir(out)
				return len(ents) > 0, notes
			}
			checkHarm(t, run, "git: removed "+tt.remove)
		})
	}
}

// The user's own links in a git directory stay, in a directory calls
// write in too; the command's go, even among many files.
func TestLinksOfTheUserStay(t *testing.T) {
	for _, walk := range []bool{false, true} {
		f := newFixture(t)
		f.walk = walk
		f.sh(userRepo + ` && ln -s ../description .git/mine && mkdir .git/info/x && ln -s ../HEAD .git/info/x/mine`)
		f.start()
		if notes := f.call(`git commit -q --allow-empty -m b && touch .git/info/x/file && for i in $(seq 1 300); do touch .git/info/x/f$i; done`); len(notes) != 0 {
			t.Errorf("walk=%v: honest calls were judged: %q", walk, notes)
		}
		for _, p := range []string{".git/mine", ".git/info/x/mine"} {
			if _, err := os.Lstat(filepath.Join(f.root, p)); err != nil {
				t.Errorf("walk=%v: the user's %s: %v", walk, p, err)
			}
		}
		notes := f.call(`ln -s ../HEAD .git/info/x/theirs`)
		if len(notes) != 1 || !strings.Contains(notes[0], "removed .git/info/x/theirs: a symbolic link") {
			t.Errorf("walk=%v: notes %q", walk, notes)
		}
		if _, err := os.Lstat(filepath.Join(f.root, ".git/info/x/mine")); err != nil {
			t.Errorf("walk=%v: the user's link went with the command's: %v", walk, err)
		}
		// Made by the user between calls: theirs, and it stays.
		f.sh(`ln -s ../HEAD .git/info/x/later`)
		if notes := f.call(""); len(notes) != 0 {
			t.Errorf("walk=%v: the user's link made between calls was judged: %q", walk, notes)
		}
	}
}

// A command cannot keep its link by taking write permission off the
// directory that holds it.
func TestLinksInUnwritableDirectory(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes in any directory, whatever its mode")
	}
	f := newFixture(t)
	f.sh(userRepo)
	f.start()
	notes := f.call(`mkdir .git/d && ln -s /nowhere .git/d/l && chmod 500 .git/d`)
	if _, err := os.Lstat(filepath.Join(f.root, ".git/d/l")); err == nil {
		t.Errorf("the link stayed; notes %q", notes)
	}
}

// A call whose end cannot check the roots (too many directories) leaves
// calls refused; once the user has removed them, what that call planted
// where the walk did not reach (zsub, made after the directories that
// stopped it) is judged, not trusted as the user's: the next call is the
// first to see it.
func TestUncheckedEndIsJudgedLater(t *testing.T) {
	defer func(n int) { walkDirsLimit = n }(walkDirsLimit)
	walkDirsLimit = 60
	for _, walk := range []bool{false, true} {
		f := newFixture(t)
		f.walk = walk
		f.sh(userRepo)
		f.start()
		notes := f.call(`ln -s "$HOME/x" .git/COMMIT_EDITMSG.x && mkdir many && (cd many && mkdir $(seq 1 80)) && git init -q zsub && git -C zsub config core.fsmonitor "$PWN"`)
		if !strings.Contains(strings.Join(notes, "\n"), "could not check") {
			t.Fatalf("walk=%v: notes %q", walk, notes)
		}
		if _, err := f.g.Begin(); err == nil {
			t.Fatalf("walk=%v: a call began while the roots cannot be checked", walk)
		}
		os.RemoveAll(filepath.Join(f.root, "many")) // the user, told to
		notes = f.call("")
		all := strings.Join(notes, "\n")
		if !strings.Contains(all, "moved zsub/.git aside") || !strings.Contains(all, "removed .git/COMMIT_EDITMSG.x") {
			t.Errorf("walk=%v: notes %q", walk, notes)
		}
		if f.userGit("zsub") {
			t.Errorf("walk=%v: the user's git ran what the unchecked call planted", walk)
		}
	}
}

// commonWithoutHEAD makes a repository w whose git directory r names, in
// commondir, a directory c that holds the repository's objects, refs and
// reflogs but no HEAD: git works there, and c is no git directory to the
// finders, so a link in it would not be looked for.
const commonWithoutHEAD = `git init -q w && git -C w commit -q --allow-empty -m w && mv w/.git c && mkdir r && mv c/HEAD c/index r/ && mkdir r/logs && mv c/logs/HEAD r/logs/ &&
echo ../c > r/commondir && printf 'gitdir: ../r\n' > w/.git && git -C w status -s`

// A repository's commondir names a directory the finders do not take for
// a git directory: the links planted there, through which the user's git
// would write outside, are never looked for. Such a commondir, which git
// never writes, is moved aside with what names it.
func TestCommondirWithoutHEAD(t *testing.T) {
	for _, tt := range []struct {
		name  string
		setup string
		calls []string
		user  [][]string
		note  string
	}{
		{name: "a branch's reflog",
			calls: []string{commonWithoutHEAD + ` && ln -sf "$OUT/x" c/logs/refs/heads/master`},
			user:  [][]string{{"commit", "-q", "--allow-empty", "-m", "user"}},
			note:  `moved w/.git aside to w/.git.quarantined-by-nanosandbox: its commondir r/commondir names a directory that is not a whole git directory (HEAD, objects/ and refs/), where the links`},
		{name: "the pack directory, for gc",
			calls: []string{commonWithoutHEAD + ` && rmdir c/objects/pack && ln -s "$OUT" c/objects/pack`},
			user:  [][]string{{"gc", "-q"}},
			note:  `moved w/.git aside`},
		{name: "a linked worktree's directory, which gc prunes",
			calls: []string{commonWithoutHEAD + ` && mkdir -p "$OUT/keep" && touch "$OUT/keep/f" && mkdir -p c/worktrees && ln -s "$OUT/keep" c/worktrees/x`},
			user:  [][]string{{"worktree", "prune"}},
			note:  `moved w/.git aside`},
		// The first call's layout is whole, and trusted; the second takes
		// HEAD away, and plants.
		{name: "HEAD taken away later",
			calls: []string{commonWithoutHEAD + ` && echo 'ref: refs/heads/master' > c/HEAD`,
				`rm c/HEAD && ln -sf "$OUT/x" c/logs/refs/heads/master`},
			user: [][]string{{"commit", "-q", "--allow-empty", "-m", "user"}},
			note: `moved r/commondir aside`},
	} {
		runWalks(t, tt.name, func(t *testing.T, walk bool) {
			t.Parallel()
			run := func(guarded bool) (bool, []string) {
				f := newFixture(t)
				f.walk = walk
				out := filepath.Join(f.home, "out")
				os.Mkdir(out, 0o755)
				expand := func(s string) string { return strings.ReplaceAll(s, "$OUT", out) }
				var notes []string
				if guarded {
					f.start()
				}
				for i, c := range tt.calls {
					if i > 0 {
						time.Sleep(settle + 100*time.Millisecond)
					}
					if guarded {
						if n := f.call(expand(c)); i == len(tt.calls)-1 {
							notes = n
						} else if len(n) != 0 {
							t.Fatalf("call %d was judged: %q", i+1, n)
						}
					} else {
						f.sh(expand(c))
					}
				}
				// Only what the user's git does there counts.
				before := f.sh(`find "` + out + `" | sort`)
				for _, args := range tt.user {
					cmd := exec.Command(f.git, append([]string{"-C", filepath.Join(f.root, "w")}, args...)...)
					cmd.Env = f.env()
					cmd.Run()
				}
				return f.sh(`find "`+out+`" | sort`) != before, notes
			}
			checkHarm(t, run, tt.note)
		})
	}
}

// A FIFO a call leaves under a name git opens (packed-refs, logs/HEAD,
// FETCH_HEAD) would have every git command of the user's wait for ever:
// removed as a link is, watched and walked.
func TestFIFOsInGitDirectoryRemoved(t *testing.T) {
	for _, walk := range []bool{false, true} {
		f := newFixture(t)
		f.walk = walk
		f.sh(userRepo)
		f.start()
		notes := f.call(`rm -f .git/packed-refs .git/logs/HEAD && mkfifo .git/packed-refs .git/logs/HEAD .git/FETCH_HEAD`)
		all := strings.Join(notes, "\n")
		for _, p := range []string{".git/packed-refs", ".git/logs/HEAD", ".git/FETCH_HEAD"} {
			if !strings.Contains(all, p) {
				t.Errorf("walk=%v: notes %q name no %s", walk, notes, p)
			}
			if fi, err := os.Lstat(filepath.Join(f.root, p)); err == nil && fi.Mode()&os.ModeNamedPipe != 0 {
				t.Errorf("walk=%v: %s is still a FIFO", walk, p)
			}
		}
		done := make(chan struct{})
		go func() { f.userGit(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("walk=%v: the user's git hangs", walk)
		}
	}
}
