package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A workspace that is a package of a monorepo: git inside cannot use the
// enclosing repository (hidden, or read-only), and the result says which
// flags let it; with them, git works there and the monorepo's config and
// hooks stay protected.
func TestGitEnclosingRepository(t *testing.T) {
	e := plantEnv(t)
	mono := filepath.Join(e.home, "mono")
	pkg := filepath.Join(mono, "packages", "app")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	e.write(filepath.Join(pkg, "a"), "a\n", 0o644)
	e.write(filepath.Join(mono, "README"), "r\n", 0o644)
	e.git("-C", mono, "init", "-q")
	e.git("-C", mono, "add", ".")
	e.git("-C", mono, "-c", "user.name=U", "-c", "user.email=u@example.com", "commit", "-qm", "i")
	e.ws = pkg
	s := e.serve()
	res, _ := s.sh(t, "git status")
	want := "git: the workspace is inside the repository at " + mono + ", whose .git commands cannot use or write; for git to work here, ask the user to make " + mono + " the workspace (its config and hooks stay protected), or to start the server with --read-only " + mono + " --writable " + filepath.Join(mono, ".git")
	if !strings.Contains(text(res), want) {
		t.Errorf("result %s\nwant a note holding %q", text(res), want)
	}
	s2 := e.serve("--read-only", mono, "--writable", filepath.Join(mono, ".git"))
	res, out := s2.sh(t, `echo b >> a && git commit -qam app && git status --porcelain && git show --stat --format= HEAD; echo x > `+filepath.Join(mono, ".git/hooks/pre-commit")+`; echo rc=$?`)
	if !strings.Contains(out.Stdout, "packages/app/a | 1 +") || strings.Contains(out.Stdout, "README") {
		t.Errorf("with the flags, a commit in the package: %s", text(res))
	}
	if !strings.Contains(out.Stdout, "rc=2") && !strings.Contains(out.Stdout, "rc=1") {
		t.Errorf("with the flags, the monorepo's hooks are writable: %s", text(res))
	}
	if _, err := os.Stat(filepath.Join(mono, ".git/hooks/pre-commit")); err == nil {
		t.Error("a hook landed in the monorepo's .git")
	}
}
