package gitguard

import (
	"fmt"
	"strings"
	"testing"
)

// TestPackageRisk: a package.json gives the project a program npx would
// run for nanosandbox-mcp however it spells the name; one that does not
// stays.
func TestPackageRisk(t *testing.T) {
	for _, tt := range []struct {
		json string
		risk bool
	}{
		{`{"name":"app","version":"1.0.0","dependencies":{"left-pad":"^1.3.0"},"scripts":{"test":"jest"}}`, false},
		{`{"name":"nanosandbox-mcp","bin":"x.js"}`, true},
		{`{"name":"app","bin":{"nanosandbox-mcp":"x.js"}}`, true},
		{`{"name":"app","bin":{"a/nanosandbox-mcp":"x.js"}}`, true},
		{`{"name":"app","bin":{"nanosandbox\u002dmcp":"x.js"}}`, true},
		{`{"name":"app","bin":{"NanoSandbox-MCP":"x.js"}}`, true},
		{"\xef\xbb\xbf" + `{"name":"nanosandbox-mcp"}`, true},
		{`{"name":"nanosandbox-mcp","name":"app"}`, true},
		{`{"name":"app","directories":{"bin":"tools"}}`, true},
		// Any directories key is taken for one that may give a bin: a
		// reader other than npm's cannot be sure which of two keys wins.
		{`{"name":"app","directories":{"lib":"lib"}}`, true},
		{`{"name":"app", not json`, false},
		{`{"name":"app","directories":{"bin":"evil"},"Directories":null}`, true},
		{`{"name":"app","bin":{"nanosandbox-mcp":"x.js"},"Directories":1}`, true},
		{`{"name":"app","DIRECTORIES":{"bin":"tools"}}`, true},
	} {
		if got := packageRisk([]byte(tt.json)) != ""; got != tt.risk {
			t.Errorf("packageRisk(%s) = %v, want %v", tt.json, got, tt.risk)
		}
	}
}

// TestNpmrcRisk: only settings that run nothing and lead nowhere, in the
// plain spelling, stay.
func TestNpmrcRisk(t *testing.T) {
	for _, tt := range []struct {
		npmrc string
		risk  bool
	}{
		{"save-exact=true\nengine-strict = true\n; a comment\n# another\n\nlegacy-peer-deps=true\n", false},
		{"node-options=--require /ws/x.js\n", true},
		{"registry=https://example.com/\n", true},
		{"@scope:registry=https://example.com/\n", true},
		{"\"node-options\"=--require x\n", true},
		{"[section]\nsave-exact=true\n", true},
		{"Node-Options=--require x\n", true},
		{"save-exact=true\nscript-shell=/ws/sh\n", true},
		{"\ufeffsave-exact=true\n", false},
		{"save-exact=true\rnode-options=--require x\rregistry=http://x/\n", true},
		{"save-exact=true\r\nengine-strict=true\r\n", false},
		{"save-exact=true\x0bnode-options=x\n", true},
		{"prefix=/ws/p\n", true},
		{"//registry.example.com/:_authToken=x\n", true},
	} {
		if got := npmrcRisk([]byte(tt.npmrc)) != ""; got != tt.risk {
			t.Errorf("npmrcRisk(%q) = %v, want %v", tt.npmrc, got, tt.risk)
		}
	}
}

// npmPackage is a shell command making a package folder dir of
// node_modules whose package.json is json, with a program x that leaves
// the marker, linked from node_modules/.bin as npm links one.
func npmPackage(dir, json string) string {
	return fmt.Sprintf(`mkdir -p node_modules/.bin '%[1]s' && printf '#!/bin/sh\n%%s\n' "$PWN" > '%[1]s/x' && chmod +x '%[1]s/x' && echo '%[2]s' > '%[1]s/package.json' && ln -sf "$(realpath --relative-to=node_modules/.bin '%[1]s/x')" node_modules/.bin/x`, dir, json)
}

const plantedName = `{"name":"nanosandbox-mcp","version":"1.0.0","bin":{"x":"x"}}`

// riskyLaunchers is what launchers finds at root that would run.
func riskyLaunchers(root string) []string {
	var out []string
	for _, e := range launchers(root, nil) {
		if launcherRisk(e) != "" {
			out = append(out, e.path)
		}
	}
	return out
}

// npx -y nanosandbox-mcp takes any package of node_modules whose
// package.json names it so, at any depth, through a symbolic link, or
// through npm's hidden lockfile (checked with the real npx: each of
// these runs the package's program). Each a call makes is moved aside,
// to a name npm does not read, and nothing that would run is left.
func TestLauncherPackagesByName(t *testing.T) {
	for _, tt := range []struct{ name, user, attack, moved string }{
		{"a folder of another name", "", npmPackage("node_modules/zzz", plantedName), "node_modules/zzz"},
		{"a renamed folder", npmPackage("node_modules/zzz", `{"name":"zzz","version":"1.0.0","bin":{"x":"x"}}`), "mv node_modules/zzz node_modules/yyy && echo '" + plantedName + "' > node_modules/yyy/package.json", "node_modules/yyy"},
		{"a scoped folder", "", npmPackage("node_modules/@s/zzz", plantedName), "node_modules/@s/zzz"},
		{"a nested folder", "mkdir -p node_modules/aaa/node_modules/bbb && echo '{\"name\":\"aaa\"}' > node_modules/aaa/package.json", npmPackage("node_modules/aaa/node_modules/zzz", plantedName), "node_modules/aaa/node_modules/zzz"},
		{"a package.json rewritten in place", npmPackage("node_modules/zzz", `{"name":"zzz","version":"1.0.0","bin":{"x":"x"}}`), "echo '" + plantedName + "' > node_modules/zzz/package.json", "node_modules/zzz"},
		{"an escaped name", "", npmPackage("node_modules/zzz", `{"name":"nanosandbox\u002dmcp","bin":{"x":"x"}}`), "node_modules/zzz"},
		{"a symbolic link to a package", "", npmPackage("pk/zzz", plantedName) + " && ln -s ../pk/zzz node_modules/zzz", "node_modules/zzz"},
		{"the hidden lockfile", npmPackage("node_modules/zzz", `{"name":"zzz","version":"1.0.0"}`), `echo '{"lockfileVersion":3,"packages":{"node_modules/zzz":{"name":"nanosandbox-mcp","version":"1.0.0","bin":{"./x.sh":"x"}}}}' > node_modules/.package-lock.json`, "node_modules/.package-lock.json"},
		{"a program of that name", "", "mkdir -p node_modules/.bin && ln -s ../zzz/x node_modules/.bin/NanoSandbox-MCP", "node_modules/.bin/NanoSandbox-MCP"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			if tt.user != "" {
				f.sh(tt.user)
			}
			f.start()
			if notes := f.call("true"); len(notes) != 0 {
				t.Fatalf("the user's own was judged: %q", notes)
			}
			notes := f.call(tt.attack)
			if all := strings.Join(notes, "\n"); !strings.Contains(all, "moved "+tt.moved+" aside") {
				t.Errorf("notes %q, want %s moved aside", notes, tt.moved)
			}
			if left := riskyLaunchers(f.root); len(left) != 0 {
				t.Errorf("left what would run: %q", left)
			}
			if notes := f.call("true"); len(notes) != 0 {
				t.Errorf("the next call: %q", notes)
			}
		})
	}
}

// What npm install leaves (packages with programs in .bin, scoped ones,
// nested ones, the hidden lockfile), a workspace's linked package, and a
// package the user had, rewritten: nothing is moved.
func TestLauncherHonestPackagesStay(t *testing.T) {
	f := newFixture(t)
	f.sh(npmPackage("node_modules/left-pad", `{"name":"left-pad","version":"1.3.0"}`))
	f.start()
	notes := f.call(npmPackage("node_modules/typescript", `{"name":"typescript","version":"5.0.0","bin":{"tsc":"x"}}`) + " && " +
		npmPackage("node_modules/@types/node", `{"name":"@types/node","version":"20.0.0"}`) + " && " +
		npmPackage("node_modules/a/node_modules/b", `{"name":"b","directories":{"lib":"lib"}}`) + " && " +
		npmPackage("packages/app", `{"name":"app","version":"1.0.0"}`) + " && ln -s ../packages/app node_modules/app && " +
		`echo '{"name":"ws","lockfileVersion":3,"packages":{"node_modules/typescript":{"version":"5.0.0","bin":{"tsc":"x"}}}}' > node_modules/.package-lock.json && ` +
		`echo '{"name":"left-pad","version":"1.3.1"}' > node_modules/left-pad/package.json`)
	if len(notes) != 0 {
		t.Errorf("notes %q", notes)
	}
}

// python -m nanosandbox_mcp, started in the workspace, imports the
// standard library's start-up modules and reads the package's metadata
// from it; each planted there in a form python takes is moved aside.
func TestLauncherPythonNames(t *testing.T) {
	for _, tt := range []struct{ attack, moved string }{
		{"mkdir importlib && touch importlib/__init__.py", "importlib"},
		{"touch collections.py", "collections.py"},
		{"touch types.pyc", "types.pyc"},
		{"touch runpy.cpython-311-x86_64-linux-gnu.so", "runpy.cpython-311-x86_64-linux-gnu.so"},
		{"mkdir NanoSandbox.MCP-1.0.dist-info && touch NanoSandbox.MCP-1.0.dist-info/METADATA", "NanoSandbox.MCP-1.0.dist-info"},
		{"mkdir nanosandbox_mcp-0.1.egg-info", "nanosandbox_mcp-0.1.egg-info"},
		{"touch nanosandbox-mcp.egg-link", "nanosandbox-mcp.egg-link"},
		{"mkdir -p lib/w && ln -s lib/w warnings", "warnings"},
		{"mkdir nanosandbox_mcp", "nanosandbox_mcp"},
	} {
		t.Run(tt.moved, func(t *testing.T) {
			f := newFixture(t)
			f.start()
			notes := f.call(tt.attack)
			if all := strings.Join(notes, "\n"); !strings.Contains(all, "moved "+tt.moved+" aside") {
				t.Errorf("notes %q, want %s moved aside", notes, tt.moved)
			}
			if left := riskyLaunchers(f.root); len(left) != 0 {
				t.Errorf("left what would run: %q", left)
			}
		})
	}
	// A namespace directory (no __init__) is no module python takes
	// before the standard library's; one that gains an __init__ is.
	f := newFixture(t)
	f.start()
	// What an agent writes, a virtual environment, and what pip install
	// --target . of a package leaves (six.py and its metadata) stay.
	if notes := f.call("mkdir types && touch types/index.ts test.py code.py types.ts typing.md six.py && mkdir nanosandbox-mcp six-1.16.0.dist-info && { python3 -m venv --without-pip .venv || mkdir -p .venv/lib; }"); len(notes) != 0 {
		t.Errorf("honest files: %q", notes)
	}
	if notes := f.call("touch types/__init__.py"); !strings.Contains(strings.Join(notes, "\n"), "moved types aside") {
		t.Errorf("types gained an __init__.py: notes %q", notes)
	}
}

// TestPackageNamed: only the top-level name counts (in any spelling of
// the key, duplicates included), not a dependency or a nested key.
func TestPackageNamed(t *testing.T) {
	for _, tt := range []struct {
		json string
		want bool
	}{
		{`{"name":"nanosandbox-mcp"}`, true},
		{`{"name":"app","name":"NanoSandbox-MCP"}`, true},
		{`{"Name":"nanosandbox-mcp"}`, true},
		{`{"name":"nanos\u0061ndbox-mcp"}`, true},
		{`{"name":"app","dependencies":{"nanosandbox-mcp":"1.0.0"}}`, false},
		{`{"name":"app","x":{"name":"nanosandbox-mcp"}}`, false},
		{`{"x":["nanosandbox-mcp"],"name":"app"}`, false},
		{`{"name":{"nanosandbox-mcp":1}}`, false},
		{`{"name":"app","description":"nanosandbox-mcp"}`, false},
	} {
		if got := packageNamed([]byte(tt.json)); got != tt.want {
			t.Errorf("packageNamed(%s) = %v, want %v", tt.json, got, tt.want)
		}
	}
}
