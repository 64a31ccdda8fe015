package gitguard

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// npx -y nanosandbox-mcp, the README's way to start the server, and
// python -m nanosandbox_mcp run from the directory the MCP client starts
// them in, which is often the workspace: what a command planted there
// would run, as the user, outside any sandbox, at the next start. So at
// the top of every root these are elements of the user's own, judged when
// a call made or changed them, and moved aside where they would run
// something; one there while no call ran (a dependency the user
// installed, the user's own .npmrc) stays while calls leave it as it is.
//
//   - node_modules/nanosandbox-mcp and node_modules/.bin/nanosandbox-mcp:
//     npx prefers a package, or a program, of the directory's own.
//   - package.json: npx runs the project's own program of that name (its
//     "bin", whatever the package's name, or its "directories.bin").
//   - .npmrc: the project's npm config, read first; node-options becomes
//     NODE_OPTIONS of what npx runs (--require runs a file), registry
//     says where the package comes from.
//   - nanosandbox_mcp, nanosandbox_mcp.py and the rest Python imports by
//     that name: python -m puts the directory it starts in first on
//     sys.path.

// launcherPaths are where npx finds a package or its program in a
// directory's node_modules, and its project's files.
var launcherPaths = []string{"node_modules/nanosandbox-mcp", "node_modules/.bin/nanosandbox-mcp", "package.json", ".npmrc"}

// maxLauncherFile bounds the package.json and .npmrc read: past it, one a
// call made is moved aside.
const maxLauncherFile = 1 << 20

// launchers returns the launcher elements of root that exist.
func launchers(root string) []element {
	var out []element
	paths := make([]string, 0, len(launcherPaths)+1)
	for _, rel := range launcherPaths {
		paths = append(paths, filepath.Join(root, rel))
	}
	for _, name := range pythonModules(root) {
		paths = append(paths, filepath.Join(root, name))
	}
	for _, p := range paths {
		id, err := lstatIdent(p)
		if err != nil || !id.exists() {
			continue
		}
		e := element{role: roleLauncher, path: p, id: id, user: true}
		switch {
		case id.isDir():
			budget := maxStrayEntries
			sum, err := treeSum(p, id, 0, &budget)
			if err != nil {
				sum = unreadSum
			}
			e.id.Sum = sum
		case isLauncherFile(p) && id.isReg():
			b, rid, err := readRegular(p, maxLauncherFile)
			if err != nil {
				e.odd = err.Error()
				break
			}
			e.id, e.content = rid, b
			e.id.Sum = contentSum(b)
		case isLauncherFile(p):
			e.odd = "it is not a regular file"
		}
		out = append(out, e)
	}
	return out
}

// isLauncherFile reports whether p is a launcher element judged by what it
// says rather than by being there.
func isLauncherFile(p string) bool {
	b := filepath.Base(p)
	return (b == "package.json" || b == ".npmrc") && filepath.Base(filepath.Dir(p)) != "node_modules"
}

// pythonModules returns the entries at the top of root that python -m
// nanosandbox_mcp would import instead of the installed package: the name
// alone (a package, or a namespace), or with any suffix (.py, .pyc, an
// extension module's .so). Python lists the directory to find them; so
// does this, up to a bound.
func pythonModules(root string) []string {
	f, err := os.Open(root)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	for n := 0; n < 1<<16; n += 256 {
		names, err := f.Readdirnames(256)
		for _, name := range names {
			if rest, ok := strings.CutPrefix(name, "nanosandbox_mcp"); ok && (rest == "" || rest[0] == '.') {
				out = append(out, name)
			}
		}
		if err != nil {
			break
		}
	}
	return out
}

// launcherRisk says what a launcher element that a call made or changed
// would run at the user's next start, or "" when it runs nothing.
func launcherRisk(e element) string {
	if e.odd != "" {
		return "cannot be read safely (" + e.odd + "), and npx reads it when it starts this server"
	}
	switch filepath.Base(e.path) {
	case "package.json":
		if !isLauncherFile(e.path) {
			break
		}
		return packageRisk(e.content)
	case ".npmrc":
		if !isLauncherFile(e.path) {
			break
		}
		return npmrcRisk(e.content)
	}
	if strings.HasPrefix(filepath.Base(e.path), "nanosandbox_mcp") {
		return "is what python -m nanosandbox_mcp imports, started there (the directory it starts in comes first on sys.path), instead of the installed package"
	}
	return "is what npx -y nanosandbox-mcp runs, started there (npx prefers a package in the directory's node_modules)"
}

// packageRisk: a package.json that gives the project a program named
// nanosandbox-mcp, which npx -y nanosandbox-mcp runs instead of the
// package. Every string in it, keys too, duplicates included, is looked at
// as JSON decodes it (escapes and all), so no spelling of the name in a
// "bin" passes; and "directories" with a "bin" makes every file of a
// directory a program. One that is not JSON to this reader is not to npm
// either (npm strips a byte order mark first, as this does), and npx
// fails on it.
func packageRisk(b []byte) string {
	d := json.NewDecoder(bytes.NewReader(bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))))
	for {
		tok, err := d.Token()
		if err != nil {
			return ""
		}
		s, ok := tok.(string)
		switch {
		case !ok:
		case strings.Contains(strings.ToLower(s), "nanosandbox-mcp"):
			return "names a program nanosandbox-mcp (or is that package), which npx -y nanosandbox-mcp runs, started there, instead of the package"
		case strings.EqualFold(s, "directories"):
			// Any spelling, anywhere: npm's reader and this one need not
			// agree on which of two keys that fold alike wins.
			return "gives directories (directories.bin makes every file of a directory a program of the project, which npx runs, started there: one named nanosandbox-mcp instead of the package)"
		}
	}
}

// npmrcKey is a line of an .npmrc that sets a key this reader knows, in
// the one plain spelling it reads: anything else (a section, a quoted or
// escaped key, an array key) is a key it does not know.
var npmrcKey = regexp.MustCompile(`^[ \t]*([a-z][a-z0-9-]*)[ \t]*=`)

// npmrcLines splits an .npmrc as npm's reader (ini) does: at every run of
// CRs and LFs, a lone CR too.
var npmrcLines = regexp.MustCompile("[\r\n]+")

// plainNpmKeys are npm settings that run nothing and lead nowhere: they
// change how npm resolves and writes a project's dependencies, or what it
// prints.
var plainNpmKeys = map[string]bool{
	"save-exact": true, "save-prefix": true, "engine-strict": true, "legacy-peer-deps": true,
	"strict-peer-deps": true, "auto-install-peers": true, "strict-peer-dependencies": true,
	"package-lock": true, "fund": true, "audit": true, "progress": true, "loglevel": true,
	"lockfile-version": true, "prefer-offline": true, "prefer-online": true, "update-notifier": true,
	"install-links": true, "save": true, "shamefully-hoist": true, "node-linker": true,
	"link-workspace-packages": true, "color": true, "unicode": true, "ignore-scripts": true, "optional": true, "omit": true, "include": true, "production": true,
}

// npmrcRisk: an .npmrc with a setting outside plainNpmKeys, or a line
// this reader cannot tell the key of. npm's own reader (ini) unquotes
// keys and takes sections as prefixes; a line that is not "key = value"
// in lowercase letters, digits and dashes is taken for a risk, so that
// this reader can err only toward moving aside.
func npmrcRisk(b []byte) string {
	for _, line := range npmrcLines.Split(string(b), -1) {
		l := strings.TrimSpace(strings.TrimPrefix(line, "\ufeff"))
		if strings.ContainsFunc(l, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }) {
			return "holds a control character in a line, which npm's reader may take apart otherwise than this one"
		}
		if l == "" || l[0] == ';' || l[0] == '#' {
			continue
		}
		m := npmrcKey.FindStringSubmatch(l)
		if m == nil {
			return "holds a line that is not a plain setting (" + quoteName(trimTo(l, 60)) + "), which npm reads when npx -y nanosandbox-mcp starts there"
		}
		if !plainNpmKeys[m[1]] {
			return "sets " + m[1] + ", which npm obeys when npx -y nanosandbox-mcp starts there (node-options runs a program, registry and the rest say where the package comes from)"
		}
	}
	return ""
}

// trimTo cuts s to n bytes.
func trimTo(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
