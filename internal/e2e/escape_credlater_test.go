package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A server runs for hours; its user logs in to things meanwhile (gh auth
// login, aws configure, ssh-keygen). A credential created after the server
// started is hidden from every later call, like one that was there before,
// wherever that home shows: a --read-only part of it, the whole of it.

func TestEscapeCredentialCreatedLater(t *testing.T) {
	for _, tt := range []struct {
		name string
		flag string // --read-only, relative to the home
		cred string // the credential created once the server runs, relative to the home
	}{
		{"gh in a read-only .config", ".config", ".config/gh/hosts.yml"},
		{"a file in a read-only home", ".", ".git-credentials"},
		{"a directory in a read-only home", ".", ".kube/config"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			if err := os.MkdirAll(filepath.Join(e.home, ".config", "git"), 0o755); err != nil {
				t.Fatal(err)
			}
			cred := filepath.Join(e.home, tt.cred)
			s := e.serve("--read-only", filepath.Join(e.home, tt.flag))
			if _, out := s.sh(t, `cat `+cred); out.ExitCode == 0 {
				t.Fatalf("before it exists: %+v", out)
			}
			if err := os.MkdirAll(filepath.Dir(cred), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(cred, []byte("token: "+secretValue+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			res, _ := s.sh(t, `cat `+cred+`; ls -A `+filepath.Dir(cred))
			if got := text(res); strings.Contains(got, secretValue) {
				t.Errorf("%s, created after the server started, was read:\n%s", tt.cred, got)
			}
			if res.IsError {
				t.Errorf("call after the credential appeared: %s", text(res))
			}
		})
	}
}

// A credential that was there at the start and is gone since (the user
// logged out) does not break the calls after: there is nothing to mask.
func TestEscapeCredentialRemovedLater(t *testing.T) {
	e := newEnv(t)
	s := e.serve("--read-only", e.home)
	if _, out := s.sh(t, `cat `+filepath.Join(e.home, ".netrc")); strings.Contains(out.Stdout, secretValue) {
		t.Fatalf("~/.netrc read: %+v", out)
	}
	if err := os.Remove(filepath.Join(e.home, ".netrc")); err != nil {
		t.Fatal(err)
	}
	res, out := s.sh(t, `cat README`)
	if res.IsError || out.Stdout != "the workspace\n" {
		t.Errorf("after ~/.netrc went: %s", text(res))
	}
}

// A home added under /home while the server runs has its credentials
// hidden too, even one readable by all: npm writes ~/.npmrc, which holds
// its tokens, with mode 644. Only root can add a home, and only root's
// test runs with /home as the host has it.
func TestEscapeCredentialNewHome(t *testing.T) {
	linuxOnly(t, "other users' homes are in /home")
	if os.Getuid() != 0 {
		t.Skip("needs root: only root can add a home under /home")
	}
	e := newEnv(t)
	s := e.serve()
	home, err := os.MkdirTemp("/home", "nsb-credlater-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	cred := filepath.Join(home, ".npmrc")
	for _, f := range []struct {
		path string
		body string
	}{{cred, "//registry.example.com/:_authToken=" + secretValue + "\n"}, {filepath.Join(home, "notes"), "readable\n"}} {
		if err := os.WriteFile(f.path, []byte(f.body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(home, 0o755); err != nil {
		t.Fatal(err)
	}
	res, _ := s.sh(t, `cat `+filepath.Join(home, "notes")+` `+cred)
	got := text(res)
	if strings.Contains(got, secretValue) {
		t.Errorf("%s, in a home made after the server started, was read:\n%s", cred, got)
	}
	if !strings.Contains(got, "readable") {
		t.Errorf("the new home's other files do not read as the host has them (the control):\n%s", got)
	}
}
