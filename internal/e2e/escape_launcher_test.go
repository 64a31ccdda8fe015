package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// What the server's own launchers read from the directory an MCP client
// starts them in, often the workspace (from the sixth sandbox red-team
// round): the project's .npmrc (node-options becomes NODE_OPTIONS of what
// npx runs), its package.json (npx runs the project's own program of the
// name asked for), and a nanosandbox_mcp module (python -m puts the
// directory first on sys.path). Each planted by a call is moved aside, so
// the user's next start runs nothing of it; the control plants the same
// on the host and sees it run, with the real npx and python.
func TestEscapeLauncherInputs(t *testing.T) {
	for _, tt := range []struct {
		name, plant, moved string
		tool               string // npx or python3
		start              func(e *env, pkg string) []string
	}{
		{"an .npmrc with node-options", `printf 'require("fs").writeFileSync(%s, "ran")\n' "'$MARK'" > .evil.js && echo "node-options=--require $PWD/.evil.js" > .npmrc`, ".npmrc", "npx",
			func(e *env, pkg string) []string {
				return []string{"npx", "-y", "--offline", "--package=" + pkg, "stand-in"}
			}},
		{"a package.json with a nanosandbox-mcp program", `mkdir -p bin && printf '#!/bin/sh\ntouch %s\n' "$MARK" > bin/x && chmod +x bin/x && echo '{"name":"app","version":"1.0.0","bin":{"nanosandbox-mcp":"bin/x"}}' > package.json`, "package.json", "npx",
			func(e *env, pkg string) []string {
				return []string{"npx", "-y", "--offline", "nanosandbox-mcp", "--version"}
			}},
		{"a nanosandbox_mcp module", `printf 'open(%s, "w").write("ran")\n' "'$MARK'" > nanosandbox_mcp.py`, "nanosandbox_mcp.py", "python3",
			func(e *env, pkg string) []string { return []string{"python3", "-m", "nanosandbox_mcp", "--version"} }},
		// npx takes any package of node_modules whose package.json names
		// it nanosandbox-mcp, whatever its folder, and runs its program
		// from node_modules/.bin.
		{"a package of another folder named nanosandbox-mcp", `mkdir -p node_modules/zzz node_modules/.bin && printf '#!/bin/sh\ntouch %s\n' "$MARK" > node_modules/zzz/x && chmod +x node_modules/zzz/x && echo '{"name":"nanosandbox-mcp","version":"1.0.0","bin":{"x":"x"}}' > node_modules/zzz/package.json && ln -s ../zzz/x node_modules/.bin/x`, "node_modules/zzz", "npx",
			func(e *env, pkg string) []string {
				return []string{"npx", "-y", "--offline", "nanosandbox-mcp", "--version"}
			}},
		// npm's hidden lockfile, newer than every folder, is read instead
		// of their package.json files: an entry naming nanosandbox-mcp
		// gives any folder a program, here a file of the workspace.
		{"the hidden lockfile naming a folder nanosandbox-mcp", `printf '#!/bin/sh\ntouch %s\n' "$MARK" > x.sh && chmod +x x.sh && mkdir -p node_modules/zzz && echo '{"name":"zzz","version":"1.0.0"}' > node_modules/zzz/package.json && sleep 1.1 && echo '{"lockfileVersion":3,"requires":true,"packages":{"node_modules/zzz":{"name":"nanosandbox-mcp","version":"1.0.0","bin":{"./x.sh":"x"}}}}' > node_modules/.package-lock.json`, "node_modules/.package-lock.json", "npx",
			func(e *env, pkg string) []string {
				return []string{"npx", "-y", "--offline", "nanosandbox-mcp", "--version"}
			}},
		// python -m imports runpy, and what runpy imports, from the
		// directory it starts in before the module asked for runs: in
		// a virtual environment (uvx's), site has loaded none of them.
		{"a standard library package importlib", `mkdir importlib && printf 'open(%s, "w").write("ran")\n' "'$MARK'" > importlib/__init__.py`, "importlib", "python3",
			func(e *env, pkg string) []string {
				return []string{venvPython(e), "-m", "nanosandbox_mcp", "--version"}
			}},
		{"a standard library module collections.py", `printf 'open(%s, "w").write("ran")\n' "'$MARK'" > collections.py`, "collections.py", "python3",
			func(e *env, pkg string) []string {
				return []string{venvPython(e), "-m", "nanosandbox_mcp", "--version"}
			}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := exec.LookPath(tt.tool); err != nil {
				t.Skipf("no %s here: %v", tt.tool, err)
			}
			setup := func(t *testing.T) (*env, string, string) {
				e := plantEnv(t)
				mark := filepath.Join(e.home, "PWNED")
				pkg := ""
				if tt.tool == "npx" {
					pkg = standInPackage(t, e)
				}
				return e, mark, pkg
			}
			// started is the user's next start of the server, in the
			// workspace, as an MCP client starts it.
			started := func(e *env, mark, pkg string) bool {
				t.Helper()
				argv := tt.start(e, pkg)
				cmd := exec.Command(argv[0], argv[1:]...)
				cmd.Dir, cmd.Env = e.ws, e.vars
				if e.cred != nil {
					cmd.SysProcAttr = &syscall.SysProcAttr{Credential: e.cred}
				}
				out, _ := cmd.CombinedOutput()
				_, err := os.Lstat(mark)
				t.Logf("%v: %s", argv, out)
				return err == nil
			}
			plant := func(mark string) string { return strings.ReplaceAll(tt.plant, "$MARK", mark) }
			t.Run("control", func(t *testing.T) {
				e, mark, pkg := setup(t)
				e.hostSh(plant(mark))
				if !started(e, mark, pkg) {
					t.Fatal("planted on the host, the start ran nothing of it: the attack tests nothing")
				}
			})
			t.Run("one-shot", func(t *testing.T) {
				e, mark, pkg := setup(t)
				_, stderr, _ := e.sh(plant(mark))
				if started(e, mark, pkg) {
					t.Errorf("the start ran what the call planted\nstderr: %s", stderr)
				}
				if !strings.Contains(stderr, "moved "+tt.moved+" aside") {
					t.Errorf("no note of %s moved aside:\n%s", tt.moved, stderr)
				}
			})
			t.Run("server", func(t *testing.T) {
				e, mark, pkg := setup(t)
				s := e.serve()
				res, _ := s.sh(t, plant(mark))
				if started(e, mark, pkg) {
					t.Errorf("the start ran what the call planted\n%s", text(res))
				}
				if !strings.Contains(text(res), "moved "+tt.moved+" aside") {
					t.Errorf("no note of %s moved aside:\n%s", tt.moved, text(res))
				}
			})
		})
	}
}

// venvPython makes a virtual environment, as uvx does, and returns its
// python.
func venvPython(e *env) string {
	e.t.Helper()
	dir := filepath.Join(e.home, "venv")
	py := filepath.Join(dir, "bin", "python")
	if _, err := os.Lstat(py); err == nil {
		return py
	}
	if out, err := exec.Command("python3", "-m", "venv", "--without-pip", dir).CombinedOutput(); err != nil {
		e.t.Skipf("python3 -m venv: %v\n%s", err, out)
	}
	return py
}

// standInPackage packs a package whose program stands in for the
// launcher, for npx to install from a file as it would from a registry.
func standInPackage(t *testing.T, e *env) string {
	t.Helper()
	dir := filepath.Join(e.home, "stand-in")
	e.write(filepath.Join(dir, "package.json"), `{"name":"stand-in","version":"1.0.0","bin":{"stand-in":"x.js"}}`, 0o644)
	e.write(filepath.Join(dir, "x.js"), "#!/usr/bin/env node\nconsole.log('the launcher ran')\n", 0o755)
	cmd := exec.Command("npm", "pack", "--silent", "--pack-destination", e.home)
	cmd.Dir, cmd.Env = dir, e.vars
	if e.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: e.cred}
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm pack: %v\n%s", err, out)
	}
	return filepath.Join(e.home, "stand-in-1.0.0.tgz")
}

// Honest project files stay: a package.json and an .npmrc of plain
// settings an agent writes (npm init, legacy-peer-deps).
func TestLauncherHonestFilesKept(t *testing.T) {
	e := plantEnv(t)
	_, stderr, code := e.sh(`echo '{"name":"app","version":"1.0.0","scripts":{"test":"node t.js"},"dependencies":{}}' > package.json && printf 'legacy-peer-deps=true\nsave-exact=true\n' > .npmrc && echo done`)
	if code != 0 || strings.Contains(stderr, "aside") {
		t.Fatalf("status %d, stderr:\n%s", code, stderr)
	}
	for _, p := range []string{"package.json", ".npmrc"} {
		if _, err := os.Lstat(filepath.Join(e.ws, p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// An honest npm install of a package during a call (its folder, its
// program in node_modules/.bin, npm's hidden lockfile, the project's
// package.json and package-lock.json): nothing is moved, no note.
func TestLauncherHonestNpmInstallKept(t *testing.T) {
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skipf("no npm here: %v", err)
	}
	e := plantEnv(t)
	tgz := standInPackage(t, e)
	b, err := os.ReadFile(tgz)
	if err != nil {
		t.Fatal(err)
	}
	e.write(filepath.Join(e.ws, "stand-in-1.0.0.tgz"), string(b), 0o644)
	_, stderr, code := e.sh(`npm_config_cache="$PWD/.npm-cache" npm install --offline --no-audit --no-fund ./stand-in-1.0.0.tgz && ls node_modules/.bin/stand-in node_modules/.package-lock.json && echo done`)
	if code != 0 || strings.Contains(stderr, "aside") {
		t.Fatalf("status %d, stderr:\n%s", code, stderr)
	}
	for _, p := range []string{"node_modules/stand-in/package.json", "node_modules/.bin/stand-in", "node_modules/.package-lock.json", "package.json"} {
		if _, err := os.Lstat(filepath.Join(e.ws, p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}
