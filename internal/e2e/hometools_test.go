package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Tools installed in the hidden home run inside with no flag: pyenv-,
// nvm- and rustup-style layouts and ~/.local/bin, each on the server's
// PATH. What they need is shown read-only; their credentials and the rest
// of the home stay hidden.
func TestHomeToolsRunInside(t *testing.T) {
	e := newEnv(t)
	h := e.home
	script := func(path, body string) { e.write(filepath.Join(h, path), "#!/bin/sh\n"+body+"\n", 0o755) }
	script(".pyenv/shims/py", `exec "$HOME/.pyenv/versions/3.11.7/bin/py" "$@"`)
	script(".pyenv/versions/3.11.7/bin/py", `echo pyenv-ok`)
	script(".nvm/versions/node/v20.1.0/bin/nd", `cat "$HOME/.nvm/alias/default"`)
	e.write(filepath.Join(h, ".nvm/alias/default"), "nvm-ok\n", 0o644)
	script(".cargo/bin/cg", `exec "$HOME/.rustup/toolchains/stable/bin/cg"`)
	script(".rustup/toolchains/stable/bin/cg", `echo rustup-ok`)
	e.write(filepath.Join(h, ".cargo/credentials.toml"), "token = \""+secretValue+"\"\n", 0o600)
	e.write(filepath.Join(h, ".cargo/registry/cache/x"), "registry\n", 0o644)
	script(".local/bin/lt", `echo local-ok`)
	script("weird/bin/wd", `echo weird-ok`)
	e.write(filepath.Join(h, "weird/secret.txt"), secretValue+"\n", 0o600)
	path := strings.Join([]string{h + "/.pyenv/shims", h + "/.nvm/versions/node/v20.1.0/bin", h + "/.cargo/bin",
		h + "/.local/bin", h + "/weird/bin", "/usr/local/bin:/usr/bin:/bin"}, ":")
	for i, v := range e.vars {
		if strings.HasPrefix(v, "PATH=") {
			e.vars[i] = "PATH=" + path
		}
	}
	out := e.mustAllow(nil, `py; nd; cg; lt; wd`)
	if out != "pyenv-ok\nnvm-ok\nrustup-ok\nlocal-ok\nweird-ok\n" {
		t.Errorf("the home's tools inside:\n%s", out)
	}
	for _, p := range []string{".cargo/credentials.toml", ".cargo/registry/cache/x", "weird/secret.txt", "notes.txt", ".ssh/id_ed25519"} {
		e.mustDeny(nil, "cat "+filepath.Join(h, p))
	}
	check, _, _ := e.runRaw("--check", "--workspace", e.ws)
	for _, p := range []string{h + "/.pyenv", h + "/.nvm", h + "/.cargo/bin", h + "/.rustup", h + "/.local/bin", h + "/weird/bin"} {
		if !strings.Contains(check, p) {
			t.Errorf("--check does not list %s:\n%s", p, check)
		}
	}
	// Off by name: then they are hidden like the rest.
	e.mustDeny([]string{"--no-home-tools"}, "py")
}

// A real pyenv, copied from a local checkout, with a version whose python
// is a script: its shim runs inside with no flag, through pyenv's own
// scripts, as the user's does outside.
func TestHomeToolsRealPyenv(t *testing.T) {
	src := os.Getenv("NANOSANDBOX_PYENV_SRC")
	for _, c := range []string{src, os.Getenv("PYENV_ROOT"), filepath.Join(os.Getenv("HOME"), ".pyenv")} {
		if c != "" {
			if _, err := os.Stat(filepath.Join(c, "libexec", "pyenv")); err == nil {
				src = c
				break
			}
		}
	}
	if src == "" {
		t.Skip("needs a pyenv checkout to copy (NANOSANDBOX_PYENV_SRC, $PYENV_ROOT or ~/.pyenv)")
	}
	e := newEnv(t)
	root := filepath.Join(e.home, ".pyenv")
	// A copy of the checkout's files (git would refuse to clone another
	// user's repository).
	os.MkdirAll(root, 0o755)
	for _, d := range []string{"bin", "libexec", "pyenv.d"} {
		if out, err := exec.Command("cp", "-R", filepath.Join(src, d), root).CombinedOutput(); err != nil && d != "pyenv.d" {
			t.Skipf("cannot copy the pyenv checkout at %s: %v %s", src, err, out)
		}
	}
	e.write(filepath.Join(root, "versions/3.99.0/bin/python3"), "#!/bin/sh\necho \"pyenv's python3 $*\"\n", 0o755)
	pyenv := exec.Command(filepath.Join(root, "bin", "pyenv"), "rehash")
	pyenv.Env = append(append([]string(nil), e.vars...), "PYENV_ROOT="+root)
	if out, err := pyenv.CombinedOutput(); err != nil {
		t.Fatalf("pyenv rehash: %v %s", err, out)
	}
	e.write(filepath.Join(root, "version"), "3.99.0\n", 0o644)
	for i, v := range e.vars {
		if strings.HasPrefix(v, "PATH=") {
			e.vars[i] = "PATH=" + root + "/shims:" + root + "/bin:" + strings.TrimPrefix(v, "PATH=")
		}
	}
	out := e.mustAllow(nil, `python3 -V; pyenv version-name`)
	if out != "pyenv's python3 -V\n3.99.0\n" {
		t.Errorf("pyenv inside:\n%s", out)
	}
}

// npm's global config, PREFIX/etc/npmrc, where npm login --location=global
// writes its token, stays masked in the Node prefixes the home tools show
// (an npm prefix in ~/.npm-global, each Node of nvm), also one written
// while the server runs, in a Node that was there or one installed since.
func TestHomeToolsCredentials(t *testing.T) {
	e := newEnv(t)
	h := e.home
	script := func(path, body string) { e.write(filepath.Join(h, path), "#!/bin/sh\n"+body+"\n", 0o755) }
	npmrc := func(path string) {
		e.write(filepath.Join(h, path), "//registry.npmjs.org/:_authToken="+secretValue+"\n", 0o600)
	}
	script(".npm-global/bin/tl", `echo npm-ok`)
	npmrc(".npm-global/etc/npmrc")
	script(".nvm/versions/node/v20.1.0/bin/nd", `echo nvm-ok`)
	npmrc(".nvm/versions/node/v20.1.0/etc/npmrc")
	script(".nvm/versions/node/v18.0.0/bin/nd18", `echo nvm18-ok`)
	for i, v := range e.vars {
		if strings.HasPrefix(v, "PATH=") {
			e.vars[i] = "PATH=" + h + "/.npm-global/bin:" + h + "/.nvm/versions/node/v20.1.0/bin:" + h + "/.nvm/versions/node/v18.0.0/bin:" + strings.TrimPrefix(v, "PATH=")
		}
	}
	s := e.serve()
	read := func(paths ...string) string {
		t.Helper()
		cmd := "tl; nd; nd18"
		for _, p := range paths {
			cmd += "; cat " + filepath.Join(h, p)
		}
		res, out := s.sh(t, cmd)
		if !strings.HasPrefix(out.Stdout, "npm-ok\nnvm-ok\nnvm18-ok\n") {
			t.Errorf("the tools do not run (the control):\n%s", text(res))
		}
		return text(res)
	}
	if got := read(".npm-global/etc/npmrc", ".nvm/versions/node/v20.1.0/etc/npmrc"); strings.Contains(got, secretValue) {
		t.Errorf("a Node prefix's etc/npmrc was read:\n%s", got)
	}
	later := []string{".nvm/versions/node/v18.0.0/etc/npmrc"}
	if runtime.GOOS == "linux" {
		// (macOS plans its profile once: a Node installed later has its
		// npmrc masked from the next start.)
		later = append(later, ".nvm/versions/node/v22.0.0/etc/npmrc")
	}
	for _, p := range later {
		npmrc(p)
	}
	if got := read(later...); strings.Contains(got, secretValue) {
		t.Errorf("an etc/npmrc written after the server started was read:\n%s", got)
	}
}
