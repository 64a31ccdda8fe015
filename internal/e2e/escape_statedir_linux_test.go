package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
)

// The server's state directory holds every workspace's private home,
// where agents keep tokens (gh auth login, git's credential store, npm
// login), and the git guard's journal. A command sees none of it, in any
// view it has: a --read-only home, XDG_CACHE_HOME outside the home, or
// another mount of either. Its own private home it still reads at ~.
func TestEscapeStateDirHidden(t *testing.T) {
	const token = "gho_" + secretValue
	store := `mkdir -p ~/.config/gh && printf 'github.com:\n    oauth_token: ` + token + `\n' > ~/.config/gh/hosts.yml &&
echo "https://u:` + token + `@github.com" > ~/.git-credentials && echo stored`
	readOwn := `cat ~/.git-credentials ~/.config/gh/hosts.yml`
	// probe lists and reads the state directory at each path given.
	probe := func(paths ...string) string {
		var b strings.Builder
		for _, p := range paths {
			b.WriteString(`S='` + p + `'; echo "== ls $S"; ls -A "$S" "$S/homes" 2>&1; cat "$S"/homes/*/.git-credentials "$S"/homes/*/.config/gh/hosts.yml 2>&1; grep -rs gho_ "$S" 2>&1` + "\n")
		}
		return b.String() + "true"
	}
	// leaks reports what of the state directory out shows.
	leaks := func(t *testing.T, out string, a *env) {
		t.Helper()
		home := filepath.Base(homeIn(cacheDir(a.home), a.ws))
		for _, leak := range []string{token, home, "git-calls", "homes\n"} {
			if strings.Contains(out, leak) {
				t.Errorf("the state directory shows %q:\n%s", leak, out)
			}
		}
	}
	// twoWorkspaces is e with A's token stored in A's private home (e.ws)
	// in state, made readable by everyone on the host up to top, so that
	// only the sandbox keeps it from B (a root caller's commands run as
	// another uid); and B, another workspace beside it.
	twoWorkspaces := func(t *testing.T, e *env, state, top string) (a, b *env) {
		a = e.in(t)
		if out := a.mustAllow(nil, store); out != "stored\n" {
			t.Fatalf("A stores its token: %q", out)
		}
		if out := a.mustAllow(nil, readOwn); strings.Count(out, token) != 2 {
			t.Fatalf("A does not read its own token at ~: %q", out)
		}
		own := homeIn(state, a.ws)
		for p := own; ; p = filepath.Dir(p) {
			os.Chmod(p, 0o755)
			if p == top || p == "/" {
				break
			}
		}
		filepath.Walk(own, func(p string, fi os.FileInfo, err error) error {
			if err == nil && fi.IsDir() {
				os.Chmod(p, 0o755)
			} else if err == nil && fi.Mode().IsRegular() {
				os.Chmod(p, 0o644)
			}
			return nil
		})
		b = e.in(t)
		b.ws = filepath.Join(e.home, "other")
		if err := os.MkdirAll(b.ws, 0o755); err != nil {
			t.Fatal(err)
		}
		return a, b
	}

	t.Run("read-only home", func(t *testing.T) {
		e := newEnv(t)
		state := cacheDir(e.home)
		a, b := twoWorkspaces(t, e, state, filepath.Dir(e.home))
		_, out := b.try([]string{"--read-only", e.home}, probe(state))
		t.Logf("B, --read-only ~:\n%s", out)
		leaks(t, out, a)
		// The rest of the home still reads, as granted.
		if out := b.mustAllow([]string{"--read-only", e.home}, `cat `+filepath.Join(e.home, "proj/README")); out != "the workspace\n" {
			t.Errorf("the granted home: %q", out)
		}
		if out := a.mustAllow(nil, readOwn); strings.Count(out, token) != 2 {
			t.Errorf("A no longer reads its own token at ~: %q", out)
		}
	})

	t.Run("cache outside the home", func(t *testing.T) {
		e := newEnv(t)
		cache := outsideDir(t)
		for i, v := range e.vars {
			if strings.HasPrefix(v, "XDG_CACHE_HOME=") {
				e.vars[i] = "XDG_CACHE_HOME=" + cache
			}
		}
		state := filepath.Join(cache, "nanosandbox-mcp")
		a, b := twoWorkspaces(t, e, state, cache)
		if _, err := os.Stat(filepath.Join(homeIn(state, a.ws), ".git-credentials")); err != nil {
			t.Fatalf("A's private home is not in %s: %v", state, err)
		}
		_, out := b.try(nil, probe(state, cache))
		t.Logf("B, XDG_CACHE_HOME=%s:\n%s", cache, out)
		leaks(t, out, a)
		// B's own private home, in the same hidden directory, is its HOME.
		if out := b.mustAllow(nil, `echo mine > ~/own && cat ~/own`); out != "mine\n" {
			t.Errorf("B's own home: %q", out)
		}
		if out := a.mustAllow(nil, readOwn); strings.Count(out, token) != 2 {
			t.Errorf("A no longer reads its own token at ~: %q", out)
		}
	})

	t.Run("other mounts", func(t *testing.T) {
		// Outside the home and host /tmp, whose other mounts are hidden
		// with them.
		e := newEnv(t)
		cache := outsideDir(t)
		for i, v := range e.vars {
			if strings.HasPrefix(v, "XDG_CACHE_HOME=") {
				e.vars[i] = "XDG_CACHE_HOME=" + cache
			}
		}
		state := filepath.Join(cache, "nanosandbox-mcp")
		a, b := twoWorkspaces(t, e, state, cache)
		setup := `set -e
mount -t tmpfs nsb-alias /mnt
mkdir /mnt/cache /mnt/state
mount --bind "$XDG_CACHE_HOME" /mnt/cache
mount --bind "$XDG_CACHE_HOME/nanosandbox-mcp" /mnt/state`
		for _, flags := range [][]string{nil, {"--read-only", e.home}} {
			cmd := b.wrapped(setup, append(append([]string{"--workspace", b.ws}, flags...), "--", "sh", "-c", probe(state, "/mnt/state", "/mnt/cache/nanosandbox-mcp"))...)
			got, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v: %v\n%s", flags, err, got)
			}
			t.Logf("B %v, other mounts:\n%s", flags, got)
			leaks(t, string(got), a)
		}
	})
}

// outsideDir makes a directory outside the test's home and outside the
// sandbox's private directories, where commands see the host's: in the
// account's own home for an unprivileged user, in /var/lib for root
// (whose home other uids cannot enter).
func outsideDir(t *testing.T) string {
	t.Helper()
	parent := "/var/lib"
	if os.Getuid() != 0 {
		u, err := user.Current()
		if err != nil || u.HomeDir == "" {
			t.Skipf("needs the account's home directory: %v", err)
		}
		parent = u.HomeDir
	}
	dir, err := os.MkdirTemp(parent, "nsb-e2e-cache-")
	if err != nil {
		t.Skipf("needs a directory the sandbox shows as the host's: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	return real
}

// homeIn is the private home the server keeps for workspace ws in the
// state directory state.
func homeIn(state, ws string) string {
	real, err := filepath.EvalSymlinks(ws)
	if err != nil {
		real = ws
	}
	sum := sha256.Sum256([]byte(real))
	return filepath.Join(state, "homes", filepath.Base(real)+"-"+hex.EncodeToString(sum[:6]))
}
