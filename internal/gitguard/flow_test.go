package gitguard

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Each attack plants, during one call, something the user's git would run
// later; the positive control plants the same with no guard and sees it
// run. After the guarded call, the user's git runs nothing planted.
func TestEndMakesPlantedRepositoriesHarmless(t *testing.T) {
	for _, tt := range []planting{
		{name: "new nested repository with fsmonitor",
			setup:  "git init -q",
			attack: `git init -q sub && git -C sub config core.fsmonitor "$PWN"`,
			dirs:   []string{"sub"}, note: "git: moved sub/.git aside to sub/.git.quarantined-by-nanosandbox: its config sub/.git/config sets core.fsmonitor"},
		{name: "a repository where there was none",
			attack: `git init -q && git config core.fsmonitor "$PWN"`,
			dirs:   []string{"."}, note: "moved .git aside"},
		{name: "a hook in a new repository",
			attack: `git init -q && printf '#!/bin/sh\n%s\n' "$PWN" > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit`,
			dirs:   []string{"."}, note: "holds pre-commit"},
		{name: "submodule .git as a symlink",
			setup: "git init -q",
			attack: `git init -q x && git -C x config core.fsmonitor "$PWN" && mv x/.git realgit && rmdir x 2>/dev/null; rm -rf x;
mkdir sub && ln -s ../realgit sub/.git`,
			dirs: []string{"sub"}, note: "moved sub/.git aside"},
		{name: "a submodule of a submodule",
			setup:  "git init -q",
			attack: `mkdir -p a/b/c && git init -q a && git init -q a/b && git init -q a/b/c && git -C a/b/c config core.fsmonitor "$PWN"`,
			dirs:   []string{"a/b/c"}, note: "moved a/b/c/.git aside"},
		{name: "gitfile into a separate git directory",
			setup:  "git init -q",
			attack: `mkdir .cache && git init -q --separate-git-dir="$PWD/.cache/g" sub && git -C sub config core.fsmonitor "$PWN"`,
			dirs:   []string{"sub"}, note: "moved sub/.git aside"},
		{name: "commondir of the user's repository",
			setup:  "git init -q",
			attack: `git init -q --bare .e && git -C .e config core.bare false && git -C .e config core.fsmonitor "$PWN" && echo ../.e > .git/commondir`,
			dirs:   []string{"."}, note: "moved .git/commondir aside to .git/commondir.quarantined-by-nanosandbox"},
		{name: "commondir in a new repository",
			attack: `git init -q --bare .e && git -C .e config core.bare false && git -C .e config core.fsmonitor "$PWN" && git init -q && echo ../.e > .git/commondir`,
			dirs:   []string{"."}, note: "moved .git aside"},
		{name: "the workspace made a bare repository",
			attack: `git init -q --bare . && git config -f config core.bare false && git config -f config core.worktree "$PWD" && git config -f config core.fsmonitor "$PWN"`,
			dirs:   []string{"."}, note: "moved HEAD aside to HEAD.quarantined-by-nanosandbox"},
		{name: "comment ending in a backslash",
			attack: `git init -q && printf '# c \\\n[core]\n\tfsmonitor = "%s"\n' "$PWN" >> .git/config`,
			dirs:   []string{"."}, note: "sets core.fsmonitor"},
		{name: "an include",
			attack: `git init -q && printf '[core]\n\tfsmonitor = "%s"\n' "$PWN" > inc && git config include.path ../inc`,
			dirs:   []string{"."}, note: "sets include.path"},
		{name: "hooksPath in a new repository",
			attack: `git init -q && mkdir h && printf '#!/bin/sh\n%s\n' "$PWN" > h/pre-commit && chmod +x h/pre-commit && git config core.hooksPath h`,
			dirs:   []string{"."}, note: "sets core.hookspath"},
	} {
		runWalks(t, tt.name, func(t *testing.T, walk bool) { testPlanted(t, tt, walk) })
	}
}

// A directory holding an entry named HEAD looks like a git directory, and
// its objects/, lfs/ and annex/ like object stores; a repository planted
// below one of them is still one that the user's git enters: through a
// gitlink in the user's repository (git status recurses into it), or as a
// submodule's git directory below .git/modules, which git submodule update
// reuses. Each is found and judged.
func TestEndFindsRepositoriesInObjectStores(t *testing.T) {
	const nested = `git init -q %[1]s && git -C %[1]s commit -q --allow-empty -m s && git -C %[1]s config core.fsmonitor "$PWN" && git add %[1]s`
	for _, tt := range []planting{
		{name: "below objects/ of a directory holding HEAD",
			setup:  "git init -q",
			attack: "mkdir x && touch x/HEAD && " + fmt.Sprintf(nested, "x/objects/sub"),
			dirs:   []string{"."}, note: "moved x/objects/sub/.git aside"},
		{name: "in a fan-out directory",
			setup:  "git init -q",
			attack: "mkdir x && touch x/HEAD && " + fmt.Sprintf(nested, "x/objects/ab/sub"),
			dirs:   []string{"."}, note: "moved x/objects/ab/sub/.git aside"},
		{name: "below objects/ of a bare repository the user made",
			setup:  "git init -q && git init -q --bare x",
			attack: fmt.Sprintf(nested, "x/objects/sub"),
			dirs:   []string{"."}, note: "moved x/objects/sub/.git aside"},
		{name: "below objects/ of a bare-looking directory a call made",
			setup:  "git init -q",
			first:  "mkdir -p x/objects x/refs && echo 'ref: refs/heads/main' > x/HEAD",
			attack: fmt.Sprintf(nested, "x/objects/sub"),
			dirs:   []string{"."}, note: "moved x/objects/sub/.git aside"},
		{name: "below a git directory's lfs store",
			setup:  "git init -q",
			attack: "mkdir x && touch x/HEAD && " + fmt.Sprintf(nested, "x/lfs/objects/ab/cd/sub"),
			dirs:   []string{"."}, note: "moved x/lfs/objects/ab/cd/sub/.git aside"},
		{name: "below a git directory's annex store",
			setup:  "git init -q",
			attack: "mkdir x && touch x/HEAD && " + fmt.Sprintf(nested, "x/annex/objects/f87/4d5/KEY/sub"),
			dirs:   []string{"."}, note: "moved x/annex/objects/f87/4d5/KEY/sub/.git aside"},
		{name: "a bare repository below objects/",
			setup:  "git init -q",
			attack: `mkdir x && touch x/HEAD && git init -q --bare x/objects/b && git -C x/objects/b config core.fsmonitor "$PWN" && git -C x/objects/b config core.bare false && git -C x/objects/b config core.worktree ../../..`,
			dirs:   []string{"x/objects/b"}, note: "moved x/objects/b/HEAD aside"},
		{name: "a submodule's git directory below .git/modules/x, which holds HEAD",
			setup: "git init -q && git commit -q --allow-empty -m u",
			attack: `git init -q .s && git -C .s commit -q --allow-empty -m s && git -c protocol.file.allow=always submodule add -q ./.s x/objects/m && git commit -qm m &&
printf '#!/bin/sh\n%s\n' "$PWN" > .git/modules/x/objects/m/hooks/post-checkout && chmod +x .git/modules/x/objects/m/hooks/post-checkout &&
git submodule deinit -q -f x/objects/m && touch .git/modules/x/HEAD`,
			dirs: []string{"."}, note: "moved .git/modules/x/objects/m",
			user: [][]string{{"submodule", "update", "--init"}}},
	} {
		runWalks(t, tt.name, func(t *testing.T, walk bool) { testPlanted(t, tt, walk) })
	}
}

// planting is something a command plants for the user's git to run.
type planting struct {
	name   string
	setup  string     // the user's, before the server starts
	first  string     // if set, an earlier call's, judged harmless
	attack string     // the command's, during a call
	dirs   []string   // where the user's tools run git afterwards
	note   string     // what the call's notes say
	user   [][]string // if set, more that the user's tools run there
}

func testPlanted(t *testing.T, tt planting, walk bool) {
	{
		{
			// Positive control: the same, unguarded, runs.
			ctl := newFixture(t)
			ctl.user = tt.user
			if tt.setup != "" {
				ctl.sh(tt.setup)
			}
			if tt.first != "" {
				ctl.sh(tt.first)
			}
			ctl.sh(tt.attack)
			if !ctl.userGit(tt.dirs...) {
				t.Fatalf("control: the planting did not run in the user's git; the attack tests nothing")
			}

			f := newFixture(t)
			f.walk = walk
			f.user = tt.user
			if tt.setup != "" {
				f.sh(tt.setup)
			}
			f.start()
			if tt.first != "" {
				if notes := f.call(tt.first); len(notes) != 0 {
					t.Fatalf("the first call was judged: %q", notes)
				}
			}
			notes := f.call(tt.attack)
			if f.userGit(tt.dirs...) {
				t.Errorf("the user's git ran what the call planted; notes: %q", notes)
			}
			if !strings.Contains(strings.Join(notes, "\n"), tt.note) {
				t.Errorf("notes %q, want one containing %q", notes, tt.note)
			}
			// The next call starts clean, and says nothing more.
			if more := f.call(""); len(more) != 0 {
				t.Errorf("the next call noted %q", more)
			}
		}
	}
}

// runWalks runs f as a subtest named name twice: with the finder that
// watches, and (", walking") with the one that walks at every call, as
// one-shot mode does.
func runWalks(t *testing.T, name string, f func(t *testing.T, walk bool)) {
	t.Helper()
	for _, walk := range []bool{false, true} {
		n := name
		if walk {
			n += ", walking"
		}
		t.Run(n, func(t *testing.T) { f(t, walk) })
	}
}

// checkHarm runs an attack unguarded, as a control that must do harm, and
// guarded, where it must not, with a note holding want. run reports
// whether the user's git, run afterwards, did harm, and the call's notes.
func checkHarm(t *testing.T, run func(guarded bool) (bool, []string), want string) {
	t.Helper()
	if harmed, _ := run(false); !harmed {
		t.Fatal("control: unguarded, the user's git did no harm: the attack tests nothing")
	}
	harmed, notes := run(true)
	if harmed {
		t.Errorf("the user's git did harm through what the call planted; notes: %q", notes)
	}
	if !strings.Contains(strings.Join(notes, "\n"), want) {
		t.Errorf("notes %q, want one containing %q", notes, want)
	}
}

func TestHonestRepositoriesStay(t *testing.T) {
	f := newFixture(t)
	f.sh("git init -q && echo a > a && git add a && git commit -qm a")
	f.start()
	notes := f.call(`git init -q sub && git -C sub commit -q --allow-empty -m s && git clone -q . b && git worktree add -q wt 2>/dev/null; git submodule add -q ./b sm 2>/dev/null; true`)
	if len(notes) != 0 {
		t.Fatalf("honest repositories were judged: %q", notes)
	}
	for _, p := range []string{"sub/.git", "b/.git", "wt/.git"} {
		if _, err := os.Lstat(filepath.Join(f.root, p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	// Next call: they are trusted, so protected like the workspace's own.
	c, err := f.g.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer c.End()
	got := map[string]bool{}
	for _, p := range c.Protect {
		got[strings.TrimPrefix(p.Path, f.root+"/")] = true
	}
	for _, want := range []string{".git/config", ".git/hooks", ".git/commondir", "sub/.git/config", "sub/.git/hooks", "b/.git/config", "wt/.git", ".git/worktrees/wt/commondir"} {
		if !got[want] {
			t.Errorf("%s is not protected; protected: %v", want, got)
		}
	}
}

func TestUserChangesBetweenCallsAreTrusted(t *testing.T) {
	f := newFixture(t)
	f.sh("git init -q")
	f.start()
	f.call("")
	// The user installs a hook, and a nested repository with fsmonitor.
	f.sh(`printf '#!/bin/sh\nexit 0\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit && git init -q tool && git -C tool config core.fsmonitor true`)
	if notes := f.call(""); len(notes) != 0 {
		t.Fatalf("the user's own changes were judged: %q", notes)
	}
	if _, err := os.Stat(filepath.Join(f.root, ".git/hooks/pre-commit")); err != nil {
		t.Error(err)
	}
}

func TestTrustedRepositoryPartsMovedAside(t *testing.T) {
	f := newFixture(t)
	f.sh(`git init -q && git config extensions.worktreeConfig true && git config core.hooksPath .husky/_ && git config include.path ../shared.gitconfig`)
	f.start()
	// Without mounts (these are unit tests), the command can write what
	// the call would protect; what was absent is judged at the end.
	notes := f.call(`mkdir -p .husky/_ && printf '#!/bin/sh\n%s\n' "$PWN" > .husky/_/pre-commit && chmod +x .husky/_/pre-commit &&
printf '[core]\n\tfsmonitor = "%s"\n' "$PWN" > .git/config.worktree && printf '[core]\n\tpager = "%s"\n' "$PWN" > shared.gitconfig`)
	all := strings.Join(notes, "\n")
	for _, want := range []string{"core.hooksPath directory", "config.worktree", "shared.gitconfig"} {
		if !strings.Contains(all, want) {
			t.Errorf("no note about %s: %q", want, notes)
		}
	}
	if f.userGit(".") {
		t.Errorf("the user's git ran what the call planted")
	}
	if _, err := os.Stat(filepath.Join(f.root, ".git/config")); err != nil {
		t.Errorf("the user's own config was moved: %v", err)
	}
}

func TestRelativeHooksPathInGlobalConfig(t *testing.T) {
	f := newFixture(t)
	os.WriteFile(filepath.Join(f.home, ".gitconfig"), []byte("[core]\n\thooksPath = .githooks\n"), 0o644)
	f.sh("git init -q")
	f.start()
	c, _ := f.g.Begin()
	f.sh(`mkdir .githooks && printf '#!/bin/sh\n%s\n' "$PWN" > .githooks/pre-commit && chmod +x .githooks/pre-commit`)
	notes := c.End()
	if !strings.Contains(strings.Join(notes, "\n"), ".githooks") || f.userGit(".") {
		t.Errorf("a hook under the user's relative core.hooksPath survived: %q", notes)
	}
}

func TestSecondRootArmedLater(t *testing.T) {
	// A submodule whose git directory lives in the private home (another
	// writable root): made harmless in one call, armed in a later one.
	f := newFixture(t)
	ph := filepath.Join(filepath.Dir(f.root), "private-home")
	os.MkdirAll(ph, 0o700)
	f.cfg.Roots = append(f.cfg.Roots, Root{Host: ph, Sandbox: "/home/user"})
	f.sh("git init -q")
	f.start()
	if notes := f.call(`git init -q --bare ` + ph + `/m.git && mkdir sub && printf 'gitdir: %s\n' ` + ph + `/m.git > sub/.git`); len(notes) != 0 {
		t.Fatalf("a harmless git directory was judged: %q", notes)
	}
	c, err := f.g.Begin()
	if err != nil {
		t.Fatal(err)
	}
	var mapped bool
	for _, p := range c.Protect {
		if p.Path == "/home/user/m.git/config" {
			mapped = true
		}
	}
	if !mapped {
		t.Errorf("the private home's git directory is not protected where commands see it: %+v", c.Protect)
	}
	f.sh(`git config -f ` + ph + `/m.git/config core.fsmonitor "$PWN"`) // what the mount would refuse
	notes := c.End()
	if f.userGit("sub") {
		t.Errorf("armed later, it ran: %q", notes)
	}
	// And pointing at one that only appears later.
	f.call(`mkdir sub2 && printf 'gitdir: %s\n' ` + ph + `/later.git > sub2/.git`)
	notes = f.call(`git init -q --bare ` + ph + `/later.git && git config -f ` + ph + `/later.git/config core.fsmonitor "$PWN"`)
	if f.userGit("sub2") || len(notes) == 0 {
		t.Errorf("a git directory that appeared later ran: %q", notes)
	}
}

func TestOutsideRedirectsRevealNothing(t *testing.T) {
	f := newFixture(t)
	secret := filepath.Join(filepath.Dir(f.root), "secret")
	f.sh("git init -q " + secret + " && git -C " + secret + " config core.fsmonitor true")
	f.start()
	a := f.call(`mkdir a && printf 'gitdir: %s\n' ` + secret + `/.git > a/.git`)
	b := f.call(`mkdir b && printf 'gitdir: %s\n' ` + secret + `/nothing > b/.git`)
	norm := func(n []string) string {
		return strings.NewReplacer("a/.git", "X/.git", "b/.git", "X/.git").Replace(strings.Join(n, "\n"))
	}
	if len(a) == 0 || norm(a) != norm(b) {
		t.Errorf("the notes tell an existing git directory outside from a missing one:\n%q\n%q", a, b)
	}
}

func TestHostileFilesFailClosedFast(t *testing.T) {
	f := newFixture(t)
	f.sh("git init -q")
	f.start()
	began := time.Now()
	notes := f.call(`mkdir -p a b c d e && mkfifo a/.git && ln -s /dev/zero b/.git &&
git init -q c && rm c/.git/config && mkfifo c/.git/config &&
git init -q d && truncate -s 1500M d/.git/config &&
git init -q e && rm -f e/.git/commondir && mkfifo e/.git/commondir &&
mkfifo .git/index.fifo && truncate -s 1500M .git/big && ln -sf /dev/zero .git/index.lnk`)
	if d := time.Since(began); d > 10*time.Second {
		t.Errorf("the end of the call took %s", d)
	}
	all := strings.Join(notes, "\n")
	for _, p := range []string{"a/.git", "b/.git", "d/.git"} {
		if !strings.Contains(all, "moved "+p+" aside") {
			t.Errorf("%s not moved aside: %q", p, notes)
		}
	}
	// A FIFO in a git directory goes as a link does, wherever it is; what
	// is left of c/.git and e/.git is then a plain repository.
	for _, p := range []string{"c/.git/config", "e/.git/commondir", ".git/index.fifo", ".git/index.lnk"} {
		if fi, err := os.Lstat(filepath.Join(f.root, p)); err == nil && !fi.Mode().IsRegular() {
			t.Errorf("%s is still there: %v", p, fi.Mode())
		}
		if !strings.Contains(all, p) {
			t.Errorf("%s not named in the notes: %q", p, notes)
		}
	}
	if !strings.Contains(all, "symbolic links or special files made inside a git directory") {
		t.Errorf("the note does not say what it removed: %q", notes)
	}
	done := make(chan struct{})
	go func() { f.userGit("c", "e"); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Errorf("the user's git waits in c or e")
	}
	if more := f.call("true"); len(more) != 0 {
		t.Errorf("next call: %q", more)
	}
}

func TestPlaceholdersOnlyWhileCallsRun(t *testing.T) {
	f := newFixture(t)
	f.sh("git init -q && rm -rf .git/hooks")
	f.start()
	a, _ := f.g.Begin()
	b, _ := f.g.Begin()
	for _, p := range []string{".git/hooks", ".git/commondir"} {
		if _, err := os.Lstat(filepath.Join(f.root, p)); err != nil {
			t.Errorf("no stand-in %s during calls: %v", p, err)
		}
	}
	if n := a.End(); len(n) != 0 {
		t.Errorf("notes %q", n)
	}
	if _, err := os.Lstat(filepath.Join(f.root, ".git/hooks")); err != nil {
		t.Errorf("stand-in removed while a call still runs: %v", err)
	}
	if n := b.End(); len(n) != 0 {
		t.Errorf("notes %q", n)
	}
	for _, p := range []string{".git/hooks", ".git/commondir"} {
		if _, err := os.Lstat(filepath.Join(f.root, p)); err == nil {
			t.Errorf("stand-in %s left after the last call", p)
		}
	}
	if st := f.sh("git status --porcelain --ignored"); st != "" {
		t.Errorf("git status shows %q", st)
	}
}

func TestConcurrentCalls(t *testing.T) {
	f := newFixture(t)
	f.sh("git init -q")
	f.start()
	a, _ := f.g.Begin()
	f.sh(`git init -q plain && git init -q evil && git -C evil config core.fsmonitor "$PWN"`)
	b, _ := f.g.Begin() // sees them, but a call runs: not trusted
	for _, p := range b.Protect {
		if strings.Contains(p.Path, "/evil/") || strings.Contains(p.Path, "/plain/") {
			t.Errorf("a repository made during another call is protected as trusted: %s", p.Path)
		}
	}
	if n := strings.Join(a.End(), "\n"); !strings.Contains(n, "moved evil/.git aside") {
		t.Errorf("first end: %q", n)
	}
	f.sh(`git -C plain config core.pager "$PWN"`) // b's command arms the harmless one
	if n := strings.Join(b.End(), "\n"); !strings.Contains(n, "moved plain/.git aside") {
		t.Errorf("second end: %q", n)
	}
	if f.userGit("plain", "evil") {
		t.Error("planted code ran")
	}
}

// A server killed during a call leaves what that call planted unjudged;
// the next server judges it before trusting anything.
func TestKilledServerCallIsJudgedByTheNext(t *testing.T) {
	f := newFixture(t)
	f.sh(`git init -q && git config core.editor vi && git config extensions.worktreeConfig true && git init -q old && git -C old config core.pager less`)
	f.cfg.StateDir = filepath.Join(filepath.Dir(f.root), "state")
	time.Sleep(1100 * time.Millisecond) // the journal counts from a second before the call
	a := f.start()
	if _, err := a.Begin(); err != nil {
		t.Fatal(err)
	}
	f.sh(`git init -q evil && git -C evil config core.fsmonitor "$PWN" && git init -q plain &&
printf '[core]\n\tfsmonitor = "%s"\n' "$PWN" > .git/config.worktree`)
	// The server dies: its lock goes with it, its journal stays.
	a.journal.f.Close()
	a.journal = nil

	b := f.start()
	notes := f.call("")
	all := strings.Join(notes, "\n")
	for _, want := range []string{"moved evil/.git aside", "moved .git/config.worktree aside", "did not finish"} {
		if !strings.Contains(all, want) {
			t.Errorf("no note %q: %q", want, notes)
		}
	}
	if strings.Contains(all, "plain") || strings.Contains(all, "old/") || strings.Contains(all, "moved .git aside") || strings.Contains(all, "moved .git/config aside") {
		t.Errorf("judged what was harmless or the user's: %q", notes)
	}
	if f.userGit(".", "evil") {
		t.Error("planted code ran")
	}
	_ = b
	// And the journal of a server that stopped between calls says nothing.
	c := f.start()
	c.journal.f.Close()
	c.journal = nil
	f.start()
	if notes := f.call(""); len(notes) != 0 {
		t.Errorf("an idle server's journal: %q", notes)
	}
}

// core.worktree is a plain setting, but it moves where the user's relative
// core.hooksPath points: the hooks there are judged.
func TestWorktreeMovesRelativeHooksPath(t *testing.T) {
	for _, attack := range []string{
		`mkdir -p evil/.githooks && printf '#!/bin/sh\n%s\n' "$PWN" > evil/.githooks/pre-commit && chmod +x evil/.githooks/pre-commit &&
git init -q x && git -C x config core.worktree ../../evil`,
		// "../L/../w" is beside L's target, as the kernel takes it,
		// not x/w as its text reads. (L is in the work tree: a link in
		// the git directory would be removed, links.go.)
		`git init -q x && mkdir -p p/q p/w/.githooks && ln -s ../p/q x/L && git -C x config core.worktree ../L/../w &&
printf '#!/bin/sh\n%s\n' "$PWN" > p/w/.githooks/pre-commit && chmod +x p/w/.githooks/pre-commit`,
	} {
		ctl := newFixture(t)
		os.WriteFile(filepath.Join(ctl.home, ".gitconfig"), []byte("[core]\n\thooksPath = .githooks\n"), 0o644)
		ctl.sh(attack)
		if !ctl.userGit("x") {
			t.Fatalf("control: the planting does not run: %s", attack)
		}
		f := newFixture(t)
		os.WriteFile(filepath.Join(f.home, ".gitconfig"), []byte("[core]\n\thooksPath = .githooks\n"), 0o644)
		f.start()
		notes := f.call(attack)
		if f.userGit("x") || !strings.Contains(strings.Join(notes, "\n"), "pre-commit") {
			t.Errorf("it ran, or the notes %q name no pre-commit: %s", notes, attack)
		}
	}
}

// A command that makes hundreds of repositories costs the end of its call
// one run of git per distinct config, and the one that plants is found.
func TestManyRepositories(t *testing.T) {
	f := newFixture(t)
	f.start()
	began := time.Now()
	notes := f.call(`git init -q r && for i in $(seq 1 400); do cp -r r r$i; done && git -C r233 config core.fsmonitor "$PWN"`)
	d := time.Since(began)
	t.Logf("400 repositories judged in %s", d)
	if len(notes) != 1 || !strings.Contains(notes[0], "moved r233/.git aside") {
		t.Errorf("notes: %q", notes)
	}
	if f.userGit("r233") {
		t.Error("planted code ran")
	}
}

// TestHiddenByPermissionsIsJudged: a command takes every permission off a
// directory holding a repository it planted, so that no scan reads it; the
// user, the same uid, may give them back later. The guard gives the owner
// back read and search permission and judges what is there.
func TestHiddenByPermissionsIsJudged(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads every directory, whatever its mode")
	}
	for _, walk := range []bool{false, true} {
		t.Run(map[bool]string{false: "watching", true: "walking"}[walk], func(t *testing.T) {
			f := newFixture(t)
			f.walk = walk
			f.sh("git init -q")
			f.start()
			notes := f.call(`mkdir d && git init -q d/sub && git -C d/sub config core.fsmonitor "$PWN" && chmod 000 d`)
			d := filepath.Join(f.root, "d")
			t.Cleanup(func() { os.Chmod(d, 0o755) })
			os.Chmod(d, 0o755) // what the user may do later
			if f.userGit("d/sub") {
				t.Errorf("the user's git ran what was planted behind a closed directory; notes: %q", notes)
			}
			if !strings.Contains(strings.Join(notes, "\n"), "moved d/sub/.git aside") {
				t.Errorf("notes %q, want d/sub/.git moved aside", notes)
			}
		})
	}
}

// A dry run judges nothing: what changes meanwhile is someone else's doing.
func TestDryRunJudgesNothing(t *testing.T) {
	f := newFixture(t)
	f.sh("git init -q")
	f.start()
	c, err := f.g.Begin()
	if err != nil {
		t.Fatal(err)
	}
	f.sh(`git init -q other && git -C other config core.fsmonitor true`) // the user, meanwhile
	c.EndQuietly()
	if _, err := os.Stat(filepath.Join(f.root, "other/.git/config")); err != nil {
		t.Errorf("a dry run moved the user's repository: %v", err)
	}
	if notes := f.call(""); len(notes) != 0 {
		t.Errorf("the next call: %q", notes)
	}
}

// TestUnmounted: where nothing keeps a call's protections read-only (the
// sandbox without namespaces), no stand-in is made for a command to fill,
// and what a call wrote in a trusted repository's hooks and config is
// judged when it ends.
func TestUnmounted(t *testing.T) {
	f := newFixture(t)
	f.sh("git init -q && rm -rf .git/hooks && mkdir -p sub && git -C sub init -q && printf '#!/bin/sh\\nexit 0\\n' > sub/.git/hooks/pre-commit && chmod +x sub/.git/hooks/pre-commit")
	f.cfg.Unmounted = true
	f.start()
	c, err := f.g.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{".git/hooks", ".git/commondir"} {
		if _, err := os.Lstat(filepath.Join(f.root, p)); err == nil {
			t.Errorf("a stand-in %s was made, which nothing keeps read-only", p)
		}
	}
	// A hook added where there was none, a config line, and a hook
	// rewritten in place, which changes no listing: each is judged.
	f.sh(`mkdir -p .git/hooks && printf '#!/bin/sh\n%s\n' "$PWN" > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit &&
printf '[core]\n\tfsmonitor = "%s"\n' "$PWN" >> .git/config && printf '#!/bin/sh\n%s\n' "$PWN" > sub/.git/hooks/pre-commit`)
	notes := c.End()
	all := strings.Join(notes, "\n")
	for _, want := range []string{".git/hooks", ".git/config", "sub/.git/hooks"} {
		if !strings.Contains(all, want) {
			t.Errorf("no note about %s: %q", want, notes)
		}
	}
	if f.userGit(".", "sub") {
		t.Errorf("the user's git ran what the call planted")
	}
}

// A work tree is where the user's git writes (checkout, restore, reset,
// stash) and deletes (clean): a repository whose core.worktree leads out of
// the roots, written so or through a symlink swapped in by a later call,
// is moved aside whole; one that stays inside, as a submodule's does, is
// kept.
func TestWorktreeOutsideIsMovedAside(t *testing.T) {
	for _, tt := range []struct {
		name  string
		calls []string // $OUT is a directory outside the roots
		note  string   // in the last call's notes; "" for none
	}{
		{"absolute", []string{`git init -q sub && git -C sub config core.worktree "$OUT"`},
			"moved sub/.git aside to sub/.git.quarantined-by-nanosandbox: it points outside the writable roots"},
		{"relative", []string{`git init -q sub && git -C sub config core.worktree "../../$(realpath --relative-to=. "$OUT")"`},
			"moved sub/.git aside"},
		{"through a symlink", []string{`ln -s "$OUT" l && git init -q sub && git -C sub config core.worktree ../../l`},
			"moved sub/.git aside"},
		// A trusted repository's own setting: the symlink goes, not it.
		{"a symlink swapped in later", []string{
			`mkdir w && git init -q sub && git -C sub config core.worktree ../../w`,
			`rmdir w && ln -s "$OUT" w`},
			"moved w aside to w.quarantined-by-nanosandbox: its work tree now leads through w, a symbolic link"},
		{"outside in config, a harmless one in config.worktree, which git reads only with the extension on",
			[]string{`git init -q sub && git -C sub config core.worktree "$OUT" && printf '[core]\n\tworktree = ..\n' > sub/.git/config.worktree`},
			"moved sub/.git aside"},
		// Git takes "~/" in core.worktree from the git directory, as
		// any relative path: no home in it. The way out there is a
		// symbolic link in the git directory, which goes (links.go).
		{"a tilde, which git does not expand there", []string{`git init -q sub && ln -s "$OUT" 'sub/.git/~' && git -C sub config core.worktree '~/'`},
			"removed sub/.git/~: a symbolic link made inside a git directory"},
		{"inside, as a submodule's", []string{`mkdir w && git init -q sub && git -C sub config core.worktree ../../w`}, ""},
		{"inside, absent", []string{`git init -q sub && git -C sub config core.worktree ../../w`}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.sh("git init -q")
			f.start()
			out := filepath.Join(filepath.Dir(f.root), "outside")
			if err := os.Mkdir(out, 0o755); err != nil {
				t.Fatal(err)
			}
			var notes []string
			for _, c := range tt.calls {
				notes = f.call(strings.ReplaceAll(c, "$OUT", out))
			}
			got := strings.Join(notes, "\n")
			if tt.note == "" {
				if got != "" {
					t.Errorf("notes %q, want none", got)
				}
				if _, err := os.Lstat(filepath.Join(f.root, "sub/.git")); err != nil {
					t.Errorf("sub/.git: %v", err)
				}
				return
			}
			if !strings.Contains(got, tt.note) {
				t.Errorf("notes %q, want one containing %q", got, tt.note)
			}
			if strings.Contains(got, out) {
				t.Errorf("notes %q name the directory outside", got)
			}
			if _, err := os.Lstat(filepath.Join(f.root, "sub/.git")); err == nil && strings.Contains(tt.note, "moved sub/.git aside") {
				t.Error("sub/.git is still there")
			}
			if _, err := os.Lstat(filepath.Join(f.root, "sub/.git/~")); err == nil {
				t.Error("sub/.git/~ is still there")
			}
		})
	}
}

// A command cannot make the move aside fail: it takes write permission
// off the directory that holds what it planted (the server, the same uid,
// gives it back), takes every fixed name the move tries, or names what is
// moved so that the fixed names are too long. Each is shown planted and
// run in a control without a guard first.
func TestMoveAsideCannotBeBlocked(t *testing.T) {
	long := strings.Repeat("i", 240)
	for _, tt := range []struct {
		name   string
		root   bool // the trick means something when the server runs as root
		setup  string
		attack string
		dirs   []string
		note   string
	}{
		{name: "parent and git directory not writable",
			setup:  "git init -q",
			attack: `git init -q sub && git -C sub config core.fsmonitor "$PWN" && chmod a-w sub/.git sub`,
			dirs:   []string{"sub"}, note: "moved sub/.git aside to sub/.git.quarantined-by-nanosandbox:"},
		{name: "every fixed name taken", root: true,
			setup: "git init -q",
			attack: `git init -q sub && git -C sub config core.fsmonitor "$PWN" && mkdir sub/.git.quarantined-by-nanosandbox &&
for i in $(seq 1 99); do mkdir sub/.git.quarantined-by-nanosandbox-$i; done`,
			dirs: []string{"sub"}, note: "moved sub/.git aside to sub/.git.quarantined-by-nanosandbox-"},
		{name: "a name too long for the suffix", root: true,
			setup:  "git init -q && git config include.path ../" + long,
			attack: `printf '[core]\n\tfsmonitor = "%s"\n' "$PWN" > ` + long,
			dirs:   []string{"."}, note: "quarantined-by-nanosandbox"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if !tt.root && os.Geteuid() == 0 {
				t.Skip("root writes in a directory whatever its mode: the trick blocks nothing for a server run as root")
			}
			f := newFixture(t)
			t.Cleanup(func() { f.sh("chmod -R u+w . 2>/dev/null; true") })
			ctl := newFixture(t)
			t.Cleanup(func() { ctl.sh("chmod -R u+w . 2>/dev/null; true") })
			ctl.sh(tt.setup)
			ctl.sh(tt.attack)
			if !ctl.userGit(tt.dirs...) {
				t.Fatal("control: the planting did not run in the user's git; the attack tests nothing")
			}
			f.sh(tt.setup)
			f.start()
			notes := f.call(tt.attack)
			if f.userGit(tt.dirs...) {
				t.Errorf("the user's git ran what the call planted; notes: %q", notes)
			}
			if all := strings.Join(notes, "\n"); !strings.Contains(all, tt.note) || strings.Contains(all, "failed") {
				t.Errorf("notes %q, want one containing %q", notes, tt.note)
			}
			if more := f.call(""); len(more) != 0 {
				t.Errorf("the next call noted %q", more)
			}
		})
	}
}

// When moving aside fails all the same (a full disk, a filesystem that
// refuses), no later call runs until it is gone, in this server or the
// next: the repository is never trusted silently.
func TestUnmovableRefusesLaterCalls(t *testing.T) {
	f := newFixture(t)
	f.cfg.StateDir = filepath.Join(filepath.Dir(f.root), "state")
	f.sh("git init -q")
	f.start()
	moveAside = func(root, path string) (string, error) { return "", errors.New("rename: no space left on device") }
	t.Cleanup(func() { moveAside = renameAside })
	notes := f.call(`git init -q sub && git -C sub config core.fsmonitor "$PWN"`)
	if all := strings.Join(notes, "\n"); !strings.Contains(all, "moving it aside failed") || !strings.Contains(all, "refused") {
		t.Errorf("notes %q, want the failure and that later calls are refused", notes)
	}
	if _, err := f.g.Begin(); err == nil || !strings.Contains(err.Error(), "sub/.git") {
		t.Errorf("the next call began (%v); want it refused, naming sub/.git", err)
	}
	// A new server, as the next one-shot run: refused too.
	f.g.Close()
	f.start()
	if _, err := f.g.Begin(); err == nil {
		t.Error("a new server began a call with the repository still there")
	}
	// Once it can be moved, the next call moves it and runs.
	moveAside = renameAside
	f.g.Close()
	f.start()
	notes = f.call("")
	if !strings.Contains(strings.Join(notes, "\n"), "moved sub/.git aside") {
		t.Errorf("notes %q, want sub/.git moved aside", notes)
	}
	if f.userGit("sub") {
		t.Error("the user's git ran what was planted")
	}
	f.g.Close()
	f.start()
	if notes := f.call(""); len(notes) != 0 {
		t.Errorf("after it was moved, a new server noted %q", notes)
	}
}

// Honest flows leave a fresh repository's config with what git, git-lfs
// and gh write there, and none of it is moved aside. (Not among them: git
// lfs install --local and git lfs track, whose filters and hooks run
// git-lfs, a program like any other.)
func TestHonestFlowsStay(t *testing.T) {
	const up = `git init -q sm && git -C sm commit -q --allow-empty -m s &&
git init -q up && git -C up commit -q --allow-empty -m a && git -C up -c protocol.file.allow=always submodule add -q ../sm sm && git -C up commit -qm sm &&
git -C up remote add origin https://example.com/up.git`
	for _, tt := range []struct{ name, flow string }{
		{"clone --recurse-submodules", `git -c protocol.file.allow=always clone -q --recurse-submodules up c`},
		{"submodule update --init", `git clone -q up c && git -C c -c protocol.file.allow=always submodule update -q --init`},
		{"submodule add", `git -C up -c protocol.file.allow=always submodule add -q "$PWD/sm" sm2`},
		{"worktree add", `git -C up worktree add -q ../wt`},
		{"sparse-checkout", `git clone -q up s && git -C s sparse-checkout set --cone x`},
		{"branch --edit-description", `GIT_EDITOR="sh -c 'echo about > \"\$1\"' -" git -C up branch --edit-description`},
		// gh repo clone and gh repo set-default need the network, git-lfs
		// learns the access mode from a server: the keys are written as
		// they write them.
		{"gh's resolved remote", `git clone -q up g && git -C g config remote.origin.gh-resolved base`},
		{"git-lfs's keys", `git clone -q up l && git -C l config lfs.repositoryformatversion 0 && git -C l config lfs.https://example.com/up.git/info/lfs.access basic`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.sh(up)
			f.start()
			if notes := f.call(tt.flow); len(notes) != 0 {
				t.Errorf("an honest flow was judged: %q", notes)
			}
		})
	}
}

// A hook rewritten in place changes no listing. A command can make sure
// the user's hooks directory is not read-only during a call: it makes
// enough repositories in one call (trusted when it ends) to push the
// user's out of the protection budget in the next. The user's
// repositories come first in the budget, and a hook rewritten in place is
// seen whether or not its directory was protected.
func TestHookRewrittenInPlace(t *testing.T) {
	const setup = `git init -q && git init -q zz && printf '#!/bin/sh\nexit 0\n' > zz/.git/hooks/pre-commit && chmod +x zz/.git/hooks/pre-commit`
	const rewrite = `printf '#!/bin/sh\n%s\n' "$PWN" > zz/.git/hooks/pre-commit`
	ctl := newFixture(t)
	ctl.sh(setup)
	ctl.sh(rewrite)
	if !ctl.userGit("zz") {
		t.Fatal("control: the rewritten hook did not run; the attack tests nothing")
	}
	t.Run("past the protection budget", func(t *testing.T) {
		protectionBudget = 20 // each trusted repository protects 2 paths
		t.Cleanup(func() { protectionBudget = maxProtections })
		f := newFixture(t)
		f.sh(setup)
		f.start()
		if notes := f.call(`for i in $(seq 10 40); do git init -q r$i; done`); len(notes) != 0 {
			t.Fatalf("honest repositories were judged: %q", notes)
		}
		c, err := f.g.Begin()
		if err != nil {
			t.Fatal(err)
		}
		protected := false
		for _, p := range c.Protect {
			protected = protected || p.Path == filepath.Join(f.root, "zz/.git/hooks")
		}
		if !protected {
			t.Error("the user's zz/.git/hooks was pushed out of the protection budget by repositories a command made")
		}
		f.sh(rewrite) // what the mount would refuse, had it been made
		notes := c.End()
		if !strings.Contains(strings.Join(notes, "\n"), "zz/.git/hooks") || f.userGit("zz") {
			t.Errorf("the hook rewritten in place survived; notes: %q", notes)
		}
	})
	t.Run("in a trusted repository, Unmounted off", func(t *testing.T) {
		f := newFixture(t)
		f.sh(setup)
		f.start()
		notes := f.call(rewrite)
		if !strings.Contains(strings.Join(notes, "\n"), "zz/.git/hooks") || f.userGit("zz") {
			t.Errorf("the hook rewritten in place survived; notes: %q", notes)
		}
	})
}
