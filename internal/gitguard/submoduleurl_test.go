package gitguard

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// privateRepo is a repository of the user's in their home, outside the
// roots, whose file says PRIVATE: what a submodule URL can name.
const privateRepo = `p=$(cd .. && pwd)/home/private && git init -q "$p" && echo PRIVATE > "$p/secret.c" && git -C "$p" add secret.c && git -C "$p" commit -qm p`

// A submodule's URL in a repository's config is where the user's git
// submodule update clones from, as git fetch fetches from a remote's: one
// that leads outside the roots and the read-only grants makes it copy a
// repository the sandbox hides into the workspace, for the next call to
// read. It is judged as a remote URL is. (The user's git clones a local
// submodule only with protocol.file.allow=always.)
func TestEndMovesSubmoduleURLsOutsideAside(t *testing.T) {
	const made = `git init -q sub && cd sub && printf '[submodule "lib"]\n\tpath = lib\n\turl = https://example.com/lib.git\n' > .gitmodules && git add .gitmodules &&
git update-index --add --cacheinfo 160000,1111111111111111111111111111111111111111,lib && git commit -qm sm && git config submodule.lib.active true && `
	for _, tt := range []struct{ name, attack, note string }{
		{name: "an absolute path", attack: made + `git config submodule.lib.url "$(cd ../.. && pwd)/home/private"`,
			note: `moved sub/.git aside to sub/.git.quarantined-by-nanosandbox: its config sub/.git/config names the submodule URL "`},
		{name: "a path from the work tree", attack: made + `git config submodule.lib.url ../../home/private`,
			note: `/home/private/.git", which leads outside the writable roots: the user's own git submodule update would clone the repository there into the workspace`},
		{name: "a file URL", attack: made + `git config submodule.lib.url "file://$(cd ../.. && pwd)/home/private"`,
			note: `moved sub/.git aside`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			checkHarm(t, func(guard bool) (bool, []string) {
				f := newFixture(t)
				f.sh(privateRepo)
				var notes []string
				if guard {
					f.start()
					notes = f.call(tt.attack)
				} else {
					f.sh(tt.attack)
				}
				cmd := exec.Command(f.git, "-C", filepath.Join(f.root, "sub"), "-c", "protocol.file.allow=always", "submodule", "update", "-q")
				cmd.Env = f.env()
				cmd.Run()
				out, _ := exec.Command(f.git, "--git-dir", filepath.Join(f.root, "sub/.git/modules/lib"), "cat-file", "-p", "HEAD:secret.c").Output()
				return strings.Contains(string(out), "PRIVATE"), notes
			}, tt.note)
		})
	}
}

// Submodule URLs that lead into the roots, into a read-only grant, or
// over the network, stay.
func TestHonestSubmoduleURLsStay(t *testing.T) {
	f := newFixture(t)
	granted := filepath.Join(filepath.Dir(f.root), "granted")
	if err := os.MkdirAll(granted, 0o755); err != nil {
		t.Fatal(err)
	}
	f.cfg.Readable = []string{granted}
	f.sh(`git init -q ../granted/lib && git -C ../granted/lib commit -q --allow-empty -m lib`)
	f.start()
	notes := f.call(`git init -q sm && git -C sm commit -q --allow-empty -m s && git init -q up && git -C up commit -q --allow-empty -m u &&
git -C up -c protocol.file.allow=always submodule add -q ../sm sm && git -C up -c protocol.file.allow=always submodule add -q "$(cd .. && pwd)/granted/lib" lib &&
git -C up config submodule.net.url https://example.com/net.git && git -C up config submodule.ssh.url git@example.com:o/r.git`)
	if len(notes) != 0 {
		t.Errorf("honest submodule URLs were judged: %q", notes)
	}
}
