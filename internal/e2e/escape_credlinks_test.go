package e2e

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Credentials reached through a symbolic link: a dotfiles layout (~/.aws
// a link into ~/dotfiles, ~/.netrc a link to a file elsewhere) keeps them
// hidden where the link leads, under --read-only ~ as in the hidden home,
// at the first call and after the link is re-pointed. From a red-team
// round: the mask used to skip every link ("its target is masked on its
// own"), which it was not.
func TestEscapeCredentialLinks(t *testing.T) {
	for _, shown := range []bool{false, true} {
		name := "hidden home"
		if shown {
			name = "--read-only ~"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			// A link out of the home leads here: a directory commands see,
			// where root can make one (host /tmp is not shown); else one
			// in the home beside the dotfiles.
			outside := filepath.Join(e.home, "dot2")
			if os.Getuid() == 0 && runtime.GOOS == "linux" {
				d, err := os.MkdirTemp("/home", "nsb-credlink-out-")
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { os.RemoveAll(d) })
				outside = d
			}
			outsideShown := shown || !strings.HasPrefix(outside, e.home+"/")
			for _, f := range []struct{ path, body string }{
				{filepath.Join(e.home, "dot/aws/credentials"), "aws_secret_access_key = " + secretValue + "-aws\n"},
				{filepath.Join(e.home, "dot/notes"), "dotfiles notes\n"},
				{filepath.Join(outside, "netrc"), "machine x password " + secretValue + "-netrc\n"},
				{filepath.Join(outside, "netrc2"), "machine x password " + secretValue + "-netrc2\n"},
				{filepath.Join(outside, "notes"), "outside notes\n"},
			} {
				if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(f.path, []byte(f.body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Chmod(outside, 0o755); err != nil {
				t.Fatal(err)
			}
			for _, l := range []string{".aws", ".netrc"} {
				os.RemoveAll(filepath.Join(e.home, l))
			}
			if err := os.Symlink("dot/aws", filepath.Join(e.home, ".aws")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(outside, "netrc"), filepath.Join(e.home, ".netrc")); err != nil {
				t.Fatal(err)
			}
			var flags []string
			if shown {
				flags = []string{"--read-only", e.home}
			}
			// What the links lead to now, at their own paths and at the links.
			readsOf := func(netrc string) string {
				r := `cat ~/.aws/credentials ~/.netrc ` + filepath.Join(e.home, "dot/aws/credentials") + ` ` + filepath.Join(outside, netrc) + `; cat ` + filepath.Join(outside, "notes")
				if shown {
					r += `; cat ~/dot/notes`
				}
				return r
			}
			reads := readsOf("netrc")
			check := func(when, got string) {
				t.Helper()
				if strings.Contains(got, secretValue) {
					t.Errorf("%s: a credential behind a link was read:\n%s", when, got)
				}
				if outsideShown && !strings.Contains(got, "outside notes") || shown && !strings.Contains(got, "dotfiles notes") {
					t.Errorf("%s: the files beside them do not read as the host has them (the control):\n%s", when, got)
				}
			}
			out, errOut, _ := e.run(flags, "sh", "-c", reads)
			check("one-shot", out+errOut)
			s := e.serve(flags...)
			res, _ := s.sh(t, reads)
			check("first call", text(res))
			// Re-pointed while the server runs.
			os.Remove(filepath.Join(e.home, ".netrc"))
			if err := os.Symlink(filepath.Join(outside, "netrc2"), filepath.Join(e.home, ".netrc")); err != nil {
				t.Fatal(err)
			}
			res, _ = s.sh(t, readsOf("netrc2"))
			check("after the link was re-pointed", text(res))
		})
	}
}

// Another user's home whose ~/.config is a link (the credential below it
// reached through it), a home that is itself a link, and a user's link to
// a system directory: every call still runs, the credentials are hidden
// where the links lead, and the system directory is not. From a red-team
// round: one user's ~/.config link failed every call of every user ("a
// symbolic link is in the way").
func TestEscapeCredentialLinksOtherHomes(t *testing.T) {
	linuxOnly(t, "other users' homes are in /home")
	if os.Getuid() != 0 {
		t.Skip("needs root: only root can add a home under /home")
	}
	const uid = 4242
	var made []string
	t.Cleanup(func() {
		for _, p := range made {
			os.RemoveAll(p)
		}
	})
	mk := func(pattern string) string {
		t.Helper()
		d, err := os.MkdirTemp("/home", pattern)
		if err != nil {
			t.Fatal(err)
		}
		made = append(made, d)
		return d
	}
	home, data, linked := mk("nsb-credlink-"), mk("nsb-credlink-data-"), mk("nsb-credlink-linked-")
	for _, f := range []struct{ path, body string }{
		{filepath.Join(data, "config/gh/hosts.yml"), "oauth_token: " + secretValue + "-gh\n"},
		{filepath.Join(data, "config/notes"), "config notes\n"},
		{filepath.Join(linked, "real/.kube/config"), "token: " + secretValue + "-kube\n"},
	} {
		if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f.path, []byte(f.body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := []struct{ link, target string }{
		{filepath.Join(home, ".config"), filepath.Join(data, "config")},
		{filepath.Join(home, ".ssh"), "/usr/share"}, // root's: not the user's to hide
		{linked + "-home", filepath.Join(linked, "real")},
	}
	made = append(made, linked+"-home")
	for _, l := range links {
		if err := os.Symlink(l.target, l.link); err != nil {
			t.Fatal(err)
		}
	}
	for _, tree := range []string{home, data, linked} {
		filepath.Walk(tree, func(p string, _ os.FileInfo, err error) error {
			if err == nil {
				os.Lchown(p, uid, uid)
			}
			return nil
		})
		os.Chmod(tree, 0o755)
	}
	os.Lchown(linked+"-home", uid, uid)

	e := newEnv(t)
	reads := `cat ` + filepath.Join(home, ".config/gh/hosts.yml") + ` ` + filepath.Join(data, "config/gh/hosts.yml") + ` ` +
		filepath.Join(linked+"-home", ".kube/config") + ` ` + filepath.Join(linked, "real/.kube/config") +
		`; cat ` + filepath.Join(data, "config/notes") + `; ls /usr/share | head -c 0 && echo usr-share-shown`
	check := func(when, got string, failed bool) {
		t.Helper()
		if failed {
			t.Errorf("%s: the call failed:\n%s", when, got)
		}
		if strings.Contains(got, secretValue) {
			t.Errorf("%s: a credential behind a link was read:\n%s", when, got)
		}
		if !strings.Contains(got, "config notes") || !strings.Contains(got, "usr-share-shown") {
			t.Errorf("%s: the files beside them, or /usr/share, do not read as the host has them:\n%s", when, got)
		}
	}
	out, errOut, code := e.run(nil, "sh", "-c", reads)
	check("one-shot", out+errOut, code == 125)
	s := e.serve()
	res, _ := s.sh(t, reads)
	check("server", text(res), res.IsError)
}
