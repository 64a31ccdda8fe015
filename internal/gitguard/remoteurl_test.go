package gitguard

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// otherRepo is a bare repository of the user's outside the roots, whose
// post-receive hook (theirs) leaves the marker: a push got there.
const otherRepo = `o=$(cd .. && pwd)/home/other.git && git init -q --bare "$o" && printf '#!/bin/sh\n%s\n' "$PWN" > "$o/hooks/post-receive" && chmod +x "$o/hooks/post-receive"`

// A repository a call makes whose remote is a local path outside the
// roots: the user's git push there writes into another repository of
// theirs and runs its hooks (git fetch or pull would copy it in). Git
// takes a URL for a local path in many spellings; each is moved aside.
func TestEndMovesRemoteURLsOutsideAside(t *testing.T) {
	const made = `git init -q sub && git -C sub commit -q --allow-empty -m s && `
	push := [][]string{{"push", "-q", "origin", "HEAD:refs/heads/planted"}}
	for _, tt := range []planting{
		{name: "an absolute path", setup: otherRepo,
			attack: made + `git -C sub remote add origin "$(cd .. && pwd)/home/other.git"`,
			dirs:   []string{"sub"}, user: push,
			note: `moved sub/.git aside to sub/.git.quarantined-by-nanosandbox: its config sub/.git/config names the remote URL "`},
		{name: "a pushurl, the url harmless", setup: otherRepo,
			attack: made + `git -C sub remote add origin https://example.com/x.git && git -C sub config remote.origin.pushurl "$(cd .. && pwd)/home/other.git"`,
			dirs:   []string{"sub"}, user: push,
			note: `which leads outside the writable roots`},
		{name: "a file URL, percent-encoded", setup: otherRepo,
			attack: made + `git -C sub remote add origin "file://$(cd .. && pwd)/home/%6fther.git"`,
			dirs:   []string{"sub"}, user: push,
			note: `moved sub/.git aside`},
		// Git passes over a file URL's host: file://localhost/x is /x.
		{name: "a file URL with a host", setup: otherRepo,
			attack: made + `git -C sub remote add origin "file://localhost$(cd .. && pwd)/home/other.git"`,
			dirs:   []string{"sub"}, user: push,
			note: `moved sub/.git aside`},
		{name: "a file URL with another host, percent-encoded", setup: otherRepo,
			attack: made + `git -C sub remote add origin "file://example.com$(cd .. && pwd)/home/%6fther.git"`,
			dirs:   []string{"sub"}, user: push,
			note: `moved sub/.git aside`},
		{name: "a relative path, without .git", setup: otherRepo,
			attack: made + `git -C sub remote add origin ../../home/other`,
			dirs:   []string{"sub"}, user: push,
			note: `moved sub/.git aside`},
		{name: "the home, by tilde", setup: otherRepo,
			attack: made + `git -C sub remote add origin '~/other.git'`,
			dirs:   []string{"sub"}, user: push,
			note: `moved sub/.git aside`},
		{name: "a symbolic link in the roots", setup: otherRepo,
			attack: made + `ln -s "$(cd .. && pwd)/home/other.git" o.git && git -C sub remote add origin "$PWD/o.git"`,
			dirs:   []string{"sub"}, user: push,
			note: `moved sub/.git aside`},
		// Git takes a branch's remote for a URL when no remote has that
		// name: git pull fetches from there, git push pushes there.
		{name: "a branch's pushremote", setup: otherRepo,
			attack: made + `git -C sub config branch.master.pushremote "$(cd .. && pwd)/home/other.git"`,
			dirs:   []string{"sub"}, user: [][]string{{"-c", "push.default=current", "push", "-q"}},
			note: `its config sub/.git/config names the remote URL "`},
		{name: "a branch's remote", setup: otherRepo,
			attack: made + `git -C sub config branch.master.remote "$(cd .. && pwd)/home/other.git" && git -C sub config branch.master.merge refs/heads/master`,
			dirs:   []string{"sub"}, user: [][]string{{"push", "-q", "--set-upstream"}, {"-c", "push.default=upstream", "push", "-q"}},
			note: `moved sub/.git aside`},
		{name: "another user's home", setup: otherRepo,
			attack: made + `git -C sub remote add origin '~root/x.git'`,
			dirs:   []string{"sub"}, user: push,
			note: `which cannot be followed safely (it names another user's home)`},
	} {
		runWalks(t, tt.name, func(t *testing.T, walk bool) {
			if tt.name == "another user's home" {
				// Nothing is there to push into: only the note counts.
				f := newFixture(t)
				f.walk = walk
				f.sh(tt.setup)
				f.start()
				if notes := f.call(tt.attack); !strings.Contains(strings.Join(notes, "\n"), tt.note) {
					t.Errorf("notes %q, want one containing %q", notes, tt.note)
				}
				return
			}
			testPlanted(t, tt, walk)
		})
	}
}

// A remote left leading nowhere by one call, and led outside by a link the
// next call makes on its way: the link goes.
func TestRemoteURLLedOutsideLater(t *testing.T) {
	ctl := newFixture(t)
	ctl.sh(otherRepo + ` && git init -q sub && git -C sub commit -q --allow-empty -m s && git -C sub remote add origin "$PWD/later" && ln -s "$(cd .. && pwd)/home/other.git" later.git`)
	ctl.user = [][]string{{"push", "-q", "origin", "HEAD:refs/heads/planted"}}
	if !ctl.userGit("sub") {
		t.Fatal("control: the user's push did not get through the link: the attack tests nothing")
	}
	for _, walk := range []bool{false, true} {
		f := newFixture(t)
		f.walk = walk
		f.sh(otherRepo)
		f.start()
		if notes := f.call(`git init -q sub && git -C sub commit -q --allow-empty -m s && git -C sub remote add origin "$PWD/later"`); len(notes) != 0 {
			t.Fatalf("walk=%v: the first call was judged: %q", walk, notes)
		}
		time.Sleep(settle + 100*time.Millisecond)
		notes := f.call(`ln -s "$(cd .. && pwd)/home/other.git" later.git`)
		if want := "moved later.git aside to later.git.quarantined-by-nanosandbox: its remote URL now leads through later.git, a symbolic link made while a call ran"; !strings.Contains(strings.Join(notes, "\n"), want) {
			t.Errorf("walk=%v: notes %q", walk, notes)
		}
		f.user = [][]string{{"push", "-q", "origin", "HEAD:refs/heads/planted"}}
		if f.userGit("sub") {
			t.Errorf("walk=%v: the user's push got outside; notes %q", walk, notes)
		}
	}
}

// Honest remotes stay: a clone of a repository in the roots, one of a
// repository the user granted read-only, network URLs of every kind, and
// the user's own repository whose remote is outside.
func TestHonestRemoteURLsStay(t *testing.T) {
	for _, walk := range []bool{false, true} {
		f := newFixture(t)
		f.walk = walk
		granted := filepath.Join(filepath.Dir(f.root), "granted")
		if err := os.MkdirAll(granted, 0o755); err != nil {
			t.Fatal(err)
		}
		f.cfg.Readable = []string{granted}
		f.sh(`git init -q ../granted/lib && git -C ../granted/lib commit -q --allow-empty -m lib && git init -q mine && git -C mine remote add origin "$(cd .. && pwd)/home/theirs.git"`)
		f.start()
		notes := f.call(`git init -q a && git -C a commit -q --allow-empty -m a && git clone -q a b && git clone -q ../granted/lib lib && git clone -q "file://$PWD/a" c &&
git init -q n && git -C n remote add gh git@github.com:o/r.git && git -C n remote add h https://example.com/r.git && git -C n remote add s ssh://host/~/r && git -C n remote add x 'hg::https://example.com/r' &&
git -C mine commit -q --allow-empty -m m 2>/dev/null; true`)
		if len(notes) != 0 {
			t.Errorf("walk=%v: honest remotes were judged: %q", walk, notes)
		}
	}
}

// A remote with no url is taken by its name (remote.c add_url_alias): a
// remote a fetch refspec alone defines, named with a path, is fetched
// from by the user's git fetch --all; a promisor remote named with a path
// (extensions.partialclone) is fetched from by git show of an object the
// repository lacks. Either copies another repository of the user's, the
// sandbox cannot read, into one the next call reads. Both are moved aside.
func TestRemoteNamedByPath(t *testing.T) {
	// The user's repository outside the roots, with a commit the next call
	// must not read, at ../home/secret (../../home/secret from sub).
	const secret = `s=$(cd .. && pwd)/home/secret && git init -q "$s" && git -C "$s" -c user.name=u -c user.email=u@x commit -q --allow-empty -m "the user's secret" && git -C "$s" rev-parse HEAD > ../secret-id`
	const made = `git init -q sub && git -C sub -c user.name=a -c user.email=a@x commit -q --allow-empty -m s && `
	for _, tt := range []struct {
		name, attack string
		user         []string // the user's step, in sub
	}{
		{"a remote defined by its fetch refspec", made + `git -C sub config remote.../../home/secret.fetch '+refs/heads/*:refs/remotes/leak/*'`,
			[]string{"fetch", "-q", "--all"}},
		{"a promisor remote", made + `git -C sub config core.repositoryformatversion 1 && git -C sub config extensions.partialclone ../../home/secret`,
			[]string{"show", "-q", "SECRET"}},
	} {
		leaked := func(f *fixture) bool {
			t.Helper()
			id, err := os.ReadFile(filepath.Join(filepath.Dir(f.root), "secret-id"))
			if err != nil {
				t.Fatal(err)
			}
			args := append([]string(nil), tt.user...)
			for i, a := range args {
				args[i] = strings.ReplaceAll(a, "SECRET", strings.TrimSpace(string(id)))
			}
			user := exec.Command(f.git, append([]string{"-C", filepath.Join(f.root, "sub")}, args...)...)
			user.Env = f.env()
			user.Run()
			check := exec.Command(f.git, "-C", filepath.Join(f.root, "sub"), "cat-file", "-e", strings.TrimSpace(string(id)))
			check.Env = f.env()
			return check.Run() == nil
		}
		t.Run(tt.name, func(t *testing.T) {
			ctl := newFixture(t)
			ctl.sh(secret)
			ctl.sh(tt.attack)
			if !leaked(ctl) {
				t.Fatal("control: the user's git did not copy the secret in; the attack tests nothing")
			}
			for _, walk := range []bool{false, true} {
				f := newFixture(t)
				f.walk = walk
				f.sh(secret)
				f.start()
				notes := f.call(tt.attack)
				if leaked(f) {
					t.Errorf("walk=%v: the user's git copied the secret in; notes %q", walk, notes)
				}
				if !strings.Contains(strings.Join(notes, "\n"), "moved sub/.git aside") {
					t.Errorf("walk=%v: notes %q", walk, notes)
				}
			}
		})
	}
}

// TestLocalURLHost: a file URL's path starts after its host, which git
// passes over (connect.c parse_connect_url), as the guard does.
func TestLocalURLHost(t *testing.T) {
	for _, tt := range []struct{ url, path string }{
		{"file:///srv/x.git", "/srv/x.git"},
		{"file://localhost/srv/x.git", "/srv/x.git"},
		{"file://example.com/srv/x.git", "/srv/x.git"},
		{"file://[::1]/srv/x.git", "/srv/x.git"},
		{"file://user@[::1]/srv/x.git", "/srv/x.git"},
		{"file://[::1/]/srv/x.git", "/srv/x.git"},
		{"file://localhost%2Fsrv/x.git", "/srv/x.git"},
		{"file://localhost", ""},
		{"/srv/x.git", "/srv/x.git"},
		{"../x", "../x"},
		{"https://example.com/x.git", ""},
		{"host:x.git", ""},
	} {
		if got, odd := localURL(tt.url); got != tt.path || odd != "" {
			t.Errorf("localURL(%q) = %q, %q; want %q", tt.url, got, odd, tt.path)
		}
	}
}

// TestGitfileURLReadOnlyWhereTheGuardReads: a file at a remote's local URL
// is read for the .git file git's transport takes it for only in the
// roots or a read-only grant. Elsewhere its path is a command's choice,
// and what is there when it is opened can be a FIFO, or a file on a mount
// that never answers: it is odd, unread, where it is.
func TestGitfileURLReadOnlyWhereTheGuardReads(t *testing.T) {
	top, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root, granted, elsewhere := filepath.Join(top, "ws"), filepath.Join(top, "granted"), filepath.Join(top, "elsewhere")
	target := filepath.Join(top, "target")
	for _, d := range []string{root, granted, elsewhere, target} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	r := &resolver{follow: func(p string) bool { return within(p, root) || within(p, granted) }}
	for _, tt := range []struct {
		dir  string
		read bool
	}{{root, true}, {granted, true}, {elsewhere, false}} {
		file := filepath.Join(tt.dir, "peer")
		if err := os.WriteFile(file, []byte("gitdir: "+target+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		var followed, odd bool
		for _, e := range r.remoteURL(file, filepath.Join(root, ".git", "config"), root) {
			followed = followed || e.path == target
			odd = odd || e.path == file && e.odd != ""
		}
		if followed != tt.read || odd == tt.read {
			t.Errorf("%s: followed to its gitdir %v, odd unread %v; want followed %v", file, followed, odd, tt.read)
		}
	}
}
