package gitguard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
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
//   - node_modules: npx takes any package there, at any depth, whose
//     package.json names it nanosandbox-mcp, whatever its folder (an npm
//     alias makes such a folder), or that npm's hidden lockfile
//     (node_modules/.package-lock.json) says is so, and runs its program
//     from node_modules/.bin; a program .bin/nanosandbox-mcp it runs
//     first. Only the packages whose package.json changed are read, and
//     a package moved aside gets a name beginning with a dot, which npm
//     does not read.
//   - package.json: npx runs the project's own program of that name (its
//     "bin", whatever the package's name, or its "directories.bin").
//   - .npmrc: the project's npm config, read first; node-options becomes
//     NODE_OPTIONS of what npx runs (--require runs a file), registry
//     says where the package comes from.
//   - nanosandbox_mcp, nanosandbox_mcp.py, its metadata and the rest
//     Python imports or reads by that name, and the standard library's
//     modules python -m imports before the module asked for runs
//     (pythonStartup): python -m puts the directory it starts in first
//     on sys.path.
//
// The root's listing is read again only when the root's own times move.

// launcherFiles are the project's files npx reads in the directory it
// starts in, judged by what they say.
var launcherFiles = []string{"package.json", ".npmrc"}

// maxLauncherFile bounds the package.json and .npmrc read: past it, one a
// call made is moved aside.
const maxLauncherFile = 1 << 20

// maxHiddenLockfile bounds node_modules/.package-lock.json read: npm
// writes every installed package there, megabytes in a large project.
const maxHiddenLockfile = 64 << 20

// maxLauncherPackages bounds the packages (at every depth of
// node_modules) whose package.json names are remembered; past it the
// rest are not judged.
const maxLauncherPackages = 200_000

// settled reports whether what was read of a path whose state is id may be
// used again while id stays: a change within a coarse timestamp's tick
// moves no time, so a state younger than a second is read again.
func settled(id ident) bool { return time.Now().UnixNano()-id.Ctime > int64(time.Second) }

// launchCache is what launchers remembers of each root between calls, so
// that a Begin or End costs what changed there, not what exists: the
// listings it read, each with the state of the directory then (read again
// only when the directory's own times move: an entry added, removed or
// renamed), and the package.json name of every package in node_modules,
// each with the state of its package.json (a file rewritten in place
// moves only its own times, so those are looked at every time).
type launchCache map[string]*rootLaunch

type rootLaunch struct {
	top, bin listCache
	mods     modulesDir
	lock     fileRisk
	files    map[string]fileRisk // package.json, .npmrc
	// pyDirs are the directories of pythonStartup names found without an
	// __init__ (namespace portions), as they were.
	pyDirs map[string]ident
}

// listCache is a directory's entries (names and kinds), as read when it
// was id, and those of them picked (pickedBy) since.
type listCache struct {
	id     ident
	ents   []dirEntry
	picked []dirEntry
	pickOK bool
}

// list lists the directory at path (id), again only when it changed; a
// directory that is not there (or is no directory) lists nothing.
func (c *listCache) list(path string, id ident) []dirEntry {
	did := id
	did.Size = 0
	if c.id.exists() && c.id == did && settled(id) {
		return c.ents
	}
	*c = listCache{}
	if !id.isDir() {
		return nil
	}
	ents, lid, err := listDir(path, 1<<20)
	if err != nil {
		return nil
	}
	lid.Size = 0
	if lid == did {
		*c = listCache{id: did, ents: ents}
	}
	return ents
}

// pickedBy is list, keeping only the entries whose name pick takes: the
// choice is made once per listing read.
func (c *listCache) pickedBy(path string, id ident, pick func(string) bool) []dirEntry {
	before := c.id
	ents := c.list(path, id)
	if c.pickOK && c.id == before && c.id.exists() {
		return c.picked
	}
	var out []dirEntry
	for _, e := range ents {
		if pick(e.name) {
			out = append(out, e)
		}
	}
	c.picked, c.pickOK = out, c.id.exists()
	return out
}

// fileRisk is what a file read said, as read when it was id.
type fileRisk struct {
	id      ident
	content []byte
	odd     string
	risk    string
}

// launchers returns the launcher elements of root: those that exist and
// would run something at the user's next start, and the project's
// package.json and .npmrc, judged by what they say when a call made or
// changed them. cache, if set, is what earlier calls read.
func launchers(root string, cache launchCache) []element {
	rl := cache[root]
	if rl == nil {
		rl = &rootLaunch{files: map[string]fileRisk{}}
		if cache != nil {
			cache[root] = rl
		}
	}
	var out []element
	for _, name := range launcherFiles {
		p := filepath.Join(root, name)
		id, err := lstatIdent(p)
		if err != nil || !id.exists() {
			delete(rl.files, name)
			continue
		}
		e := element{role: roleLauncher, path: p, id: id, user: true}
		if !id.isReg() {
			e.odd = "it is not a regular file"
			out = append(out, e)
			continue
		}
		f, ok := rl.files[name]
		if !ok || f.id.Dev != id.Dev || f.id.Ino != id.Ino || f.id.Size != id.Size || f.id.Mtime != id.Mtime || f.id.Ctime != id.Ctime || !settled(id) {
			b, rid, err := readRegular(p, maxLauncherFile)
			f = fileRisk{id: rid}
			if err != nil {
				f.odd = err.Error()
			} else {
				f.content = b
				f.id.Sum = contentSum(b)
			}
			rl.files[name] = f
		}
		e.id, e.content, e.odd = f.id, f.content, f.odd
		out = append(out, e)
	}
	rid, err := lstatIdent(root)
	if err != nil {
		return out
	}
	pyDirs := map[string]ident{}
	defer func() { rl.pyDirs = pyDirs }()
	for _, en := range rl.top.pickedBy(root, rid, pythonCandidate) {
		name := en.name
		p := filepath.Join(root, name)
		id, err := lstatIdent(p)
		if err != nil || !id.exists() {
			continue
		}
		if c, ok := rl.pyDirs[name]; ok && c == id && settled(id) {
			pyDirs[name] = id
			continue // a directory without an __init__, as it was
		}
		why := pythonRisk(p, name)
		if why == "" {
			if id.isDir() {
				pyDirs[name] = id
			}
			continue
		}
		e := element{role: roleLauncher, path: p, id: id, user: true, launch: why}
		if id.isDir() {
			budget := maxStrayEntries
			sum, err := treeSum(p, id, 0, &budget)
			if err != nil {
				sum = unreadSum
			}
			e.id.Sum = sum
		}
		out = append(out, e)
	}
	nm := filepath.Join(root, "node_modules")
	nid, _ := lstatIdent(nm)
	switch {
	case nid.isLink():
		out = append(out, element{role: roleLauncher, path: nm, id: nid, user: true,
			launch: "is a symbolic link, which npx -y nanosandbox-mcp follows, started there, to look for a package of that name (any folder of it, by its package.json) that the sandbox does not read"})
	case nid.isDir():
		budget := maxLauncherPackages
		out = rl.mods.scan(nm, nid, 0, &budget, out)
		out = rl.binLaunchers(nm, out)
		out = rl.lockLauncher(nm, out)
	default:
		rl.mods, rl.bin, rl.lock = modulesDir{}, listCache{}, fileRisk{}
	}
	return out
}

// binLaunchers: a program of node_modules/.bin named nanosandbox-mcp
// (in any case) is what npx runs before it looks for a package.
func (rl *rootLaunch) binLaunchers(nm string, out []element) []element {
	bin := filepath.Join(nm, ".bin")
	id, _ := lstatIdent(bin)
	if id.isLink() {
		rl.bin = listCache{}
		return append(out, element{role: roleLauncher, path: bin, id: id, user: true,
			launch: "is a symbolic link: npx -y nanosandbox-mcp runs the program nanosandbox-mcp of the directory it leads to, started there"})
	}
	// npx looks for that name alone (in any case, where the file
	// system folds case).
	for _, en := range rl.bin.pickedBy(bin, id, func(n string) bool { return strings.EqualFold(n, npmName) }) {
		p := filepath.Join(bin, en.name)
		if bid, err := lstatIdent(p); err == nil && bid.exists() {
			out = append(out, element{role: roleLauncher, path: p, id: bid, user: true,
				launch: "is what npx -y nanosandbox-mcp runs, started there (npx prefers a program of the directory's node_modules/.bin)"})
		}
	}
	return out
}

// lockLauncher: npm's hidden lockfile, node_modules/.package-lock.json,
// is what npx reads for the packages installed there instead of their
// package.json files, when no folder there is newer than it: an entry
// in it that names the package nanosandbox-mcp (or gives the folder of
// one a program) makes npx run that folder's program, whatever the
// folder holds. One that names nanosandbox-mcp anywhere is a risk; npm
// writes it anew from node_modules when it is gone.
func (rl *rootLaunch) lockLauncher(nm string, out []element) []element {
	p := filepath.Join(nm, ".package-lock.json")
	id, err := lstatIdent(p)
	if err != nil || !id.exists() {
		rl.lock = fileRisk{}
		return out
	}
	f := rl.lock
	if !f.id.exists() || f.id.Dev != id.Dev || f.id.Ino != id.Ino || f.id.Size != id.Size || f.id.Mtime != id.Mtime || f.id.Ctime != id.Ctime || !settled(id) {
		f = fileRisk{id: id}
		b, rid, err := readRegular(p, maxHiddenLockfile)
		switch {
		case err != nil:
			f.risk = "cannot be read safely (" + err.Error() + "), and npx reads it, started there, for the packages installed there"
		case containsFold(b, npmName) || bytes.Contains(b, []byte(`\u`)) && jsonHas(b, npmName):
			f.id = rid
			f.id.Sum = contentSum(b)
			f.risk = "names the package nanosandbox-mcp, and npx -y nanosandbox-mcp, started there, runs the program the entry gives of the folder it names instead of the package"
		default:
			f.id = rid
			f.id.Sum = contentSum(b)
		}
		rl.lock = f
	}
	if f.risk == "" {
		return out
	}
	return append(out, element{role: roleLauncher, path: p, id: f.id, user: true, launch: f.risk})
}

// jsonHas reports whether a string of the JSON b (keys too, as decoded:
// escapes and all) holds w, in any case.
func jsonHas(b []byte, w string) bool {
	d := json.NewDecoder(bytes.NewReader(bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))))
	for {
		tok, err := d.Token()
		if err != nil {
			return false
		}
		if s, ok := tok.(string); ok && strings.Contains(strings.ToLower(s), w) {
			return true
		}
	}
}

// npmName is the package npx -y nanosandbox-mcp asks for.
const npmName = "nanosandbox-mcp"

// modulesDir is what launchers remembers of a node_modules directory:
// npx -y nanosandbox-mcp takes any package of the directory's
// node_modules, at any depth, whose package.json names it
// nanosandbox-mcp, whatever its folder's name (npm i x@npm:nanosandbox-mcp
// makes such a folder), and runs its program from node_modules/.bin. npm
// reads every entry of node_modules but those beginning with a dot, and
// the packages of @scope directories.
type modulesDir struct {
	list   listCache
	scopes map[string]*listCache
	pkgs   map[string]*modulePkg // by folder below node_modules: "a", "@s/b"
}

// modulePkg is a package folder of a node_modules directory: what its
// package.json said, as read when it was pjID (through a symbolic link,
// the folder it leads to), and its own node_modules.
type modulePkg struct {
	pjPath string
	pjID   ident
	risk   string
	dirID  ident // the folder, when its node_modules was looked for
	nested *modulesDir
}

// scan brings d up to date with the node_modules directory at path (id)
// and adds the packages that would run at the user's next start.
func (d *modulesDir) scan(path string, id ident, depth int, budget *int, out []element) []element {
	if d.pkgs == nil {
		d.pkgs, d.scopes = map[string]*modulePkg{}, map[string]*listCache{}
	}
	var folders []dirEntry
	seenScope := map[string]bool{}
	for _, en := range d.list.list(path, id) {
		name := en.name
		if strings.HasPrefix(name, ".") {
			continue
		}
		if strings.HasPrefix(name, "@") && en.id.isDir() {
			sc := d.scopes[name]
			if sc == nil {
				sc = &listCache{}
				d.scopes[name] = sc
			}
			seenScope[name] = true
			sp := path + "/" + name
			sid, _ := lstatIdent(sp)
			for _, n := range sc.list(sp, sid) {
				if !strings.HasPrefix(n.name, ".") {
					folders = append(folders, dirEntry{name: name + "/" + n.name, id: n.id})
				}
			}
			continue
		}
		folders = append(folders, en)
	}
	for name := range d.scopes {
		if !seenScope[name] {
			delete(d.scopes, name)
		}
	}
	// Each package's files are looked at through the directory, opened
	// once: a path walked from the root for each costs several times as
	// much. What is read is opened refusing symlinks (moduleRisk).
	dfd, err := openNoSymlinks(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NONBLOCK|unix.O_CLOEXEC)
	if err != nil {
		dfd = -1
	} else {
		defer unix.Close(dfd)
	}
	seen := make(map[string]bool, len(folders))
	for _, f := range folders {
		if *budget <= 0 {
			break
		}
		*budget--
		seen[f.name] = true
		p := d.pkgs[f.name]
		if p == nil {
			p = &modulePkg{}
			d.pkgs[f.name] = p
		}
		out = p.scan(dfd, path, f.name, f.id.Kind, depth, budget, out)
	}
	for f := range d.pkgs {
		if !seen[f] {
			delete(d.pkgs, f)
		}
	}
	return out
}

// scan reads what the package folder at path (folder below node_modules)
// names itself, again only when its package.json changed, and looks into
// its own node_modules.
func (p *modulePkg) scan(dfd int, dir, folder string, kind uint32, depth int, budget *int, out []element) []element {
	path := dir + "/" + folder
	pj := path + "/package.json"
	at := func(rel string) ident {
		if dfd < 0 {
			id, _ := lstatIdent(filepath.Join(path, rel))
			return id
		}
		var st unix.Stat_t
		name := folder
		if rel != "" {
			name += "/" + rel
		}
		if err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return ident{}
		}
		return identOf(&st)
	}
	var pjID ident
	if kind == unix.S_IFLNK {
		// npm follows it to the package it leads to.
		if t, err := canonical(path); err == nil {
			pj = filepath.Join(t, "package.json")
		} else {
			pj = ""
		}
	}
	switch {
	case kind == unix.S_IFDIR:
		pjID = at("package.json")
	case pj != "":
		pjID, _ = lstatIdent(pj)
	}
	if pj != p.pjPath || !pjID.exists() || pjID != p.pjID || !settled(pjID) {
		p.pjPath, p.pjID, p.risk = pj, pjID, moduleRisk(pj, pjID)
	}
	var id ident
	if p.risk != "" || depth == 0 && strings.EqualFold(folder, npmName) {
		id, _ = lstatIdent(path)
	}
	if depth == 0 && strings.EqualFold(folder, npmName) && id.exists() {
		// The folder npx looked in by name before it looked by
		// package.json: judged by being there, as it was.
		p.risk = "is what npx -y nanosandbox-mcp runs, started there (npx prefers a package in the directory's node_modules)"
	}
	if p.risk != "" {
		e := element{role: roleLauncher, path: path, id: id, user: true, launch: p.risk}
		if id.isDir() {
			budget := maxStrayEntries
			sum, err := treeSum(path, id, 0, &budget)
			if err != nil {
				sum = unreadSum
			}
			e.id.Sum = sum
		}
		out = append(out, e)
	}
	if kind != unix.S_IFDIR || depth >= maxIncludeDepth {
		p.nested = nil
		return out
	}
	// Its own node_modules is looked for when the folder changed (one
	// made there moves the folder's times) or was there before: a
	// lookup of a name that is not there costs more than one of the
	// folder itself.
	nm := path + "/node_modules"
	var nid ident
	if did := at(""); p.nested != nil || did != p.dirID || !settled(did) {
		p.dirID = did
		nid = at("node_modules")
	}
	if !nid.isDir() {
		p.nested = nil
		if nid.isLink() {
			out = append(out, element{role: roleLauncher, path: nm, id: nid, user: true,
				launch: "is a symbolic link, which npx -y nanosandbox-mcp follows, started there, to look for a package of that name that the sandbox does not read"})
		}
		return out
	}
	if p.nested == nil {
		p.nested = &modulesDir{}
	}
	return p.nested.scan(nm, nid, depth+1, budget, out)
}

// moduleRisk says why the package whose package.json is at pj (in the
// state id) would run at the user's next start: its name is
// nanosandbox-mcp, in any case or escape, or it cannot be read safely.
// One that is not there, or is not JSON, names nothing.
func moduleRisk(pj string, id ident) string {
	if pj == "" || !id.exists() {
		return ""
	}
	b, _, err := readRegular(pj, maxLauncherFile)
	if err != nil {
		return "has a package.json that cannot be read safely (" + err.Error() + "), and npx -y nanosandbox-mcp, started there, takes any package of node_modules whose package.json names it so"
	}
	if packageNamed(b) {
		return "is named nanosandbox-mcp by its package.json, and npx -y nanosandbox-mcp, started there, runs the program of any package of node_modules so named (whatever its folder) instead of the package"
	}
	return ""
}

// packageNamed reports whether a package.json's top-level "name", in any
// spelling of the key (duplicates included), holds nanosandbox-mcp in any
// case.
func packageNamed(b []byte) bool {
	if !containsFold(b, "nanosandbox") && !bytes.Contains(b, []byte(`\u`)) {
		return false // the common case: nothing to decode
	}
	d := json.NewDecoder(bytes.NewReader(bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))))
	depth, key := 0, true
	for {
		tok, err := d.Token()
		if err != nil {
			return false
		}
		switch t := tok.(type) {
		case json.Delim:
			if t == '{' || t == '[' {
				depth++
			} else {
				depth--
			}
			key = depth == 1
			continue
		case string:
			if depth == 1 && key && strings.EqualFold(t, "name") {
				v, err := d.Token()
				if err != nil {
					return false
				}
				if s, ok := v.(string); ok && strings.Contains(strings.ToLower(s), npmName) {
					return true
				}
				if dl, ok := v.(json.Delim); ok && (dl == '{' || dl == '[') {
					depth++
					key = false
					continue
				}
				key = true
				continue
			}
		}
		if depth == 1 {
			key = !key
		}
	}
}

// pythonStartup are the modules python -m imports from sys.path once the
// directory it starts in is first on it, before the module asked for
// runs: runpy and what it imports (importlib.machinery and util, and what
// those import), unless site loaded them first. Measured with -X
// importtime and a module planted in the directory, for 3.8 to 3.13 in a
// virtual environment (as uvx makes, where site loads least: 3.8 and 3.9
// import the most, pkgutil, weakref, re, typing..., 3.13 only importlib
// and types), and read from runpy and importlib.util for 3.14; C modules
// a build keeps in lib-dynload (_heapq) are imported from sys.path as any
// other. Each, as a module or package at the top of the directory, runs
// as the user before our __main__ can drop the directory from sys.path.
// Other names (test.py, code.py) stay.
var pythonStartup = map[string]bool{
	"runpy": true, "importlib": true, "types": true, "warnings": true, "contextlib": true,
	"functools": true, "collections": true, "keyword": true, "operator": true, "reprlib": true,
	"pkgutil": true, "weakref": true, "_weakrefset": true, "heapq": true, "_heapq": true,
	"enum": true, "re": true, "sre_compile": true, "sre_constants": true, "sre_parse": true,
	"copyreg": true, "typing": true,
}

// pythonRisk says why the entry name at the top of a root (at p) is what
// python -m nanosandbox_mcp would run or read, started there, or "":
//
//   - a name whose PEP 503 form begins with nanosandbox-mcp, but that
//     form itself (a directory named nanosandbox-mcp, a clone of this
//     project, is nothing python imports or reads): the package
//     (nanosandbox_mcp, .py, .pyc, an extension module), its metadata
//     (NanoSandbox.MCP-1.0.dist-info, egg-info, egg-link), which
//     importlib.metadata and entry points find in every sys.path entry;
//   - a module of pythonStartup in a form the import system takes:
//     NAME.py, NAME.pyc, NAME.*.so, or a package directory NAME holding
//     an __init__ of those (one without is a namespace portion, which
//     the standard library's module wins over).
func pythonRisk(p, name string) string {
	if strings.Contains(name, quarantineSuffix) {
		return "" // moved aside: no name python imports or reads
	}
	if n := pep503(name); strings.HasPrefix(n, "nanosandbox-mcp") && n != name {
		return "is what python -m nanosandbox_mcp imports or reads (the package, or its metadata), started there (the directory it starts in comes first on sys.path), instead of the installed package"
	}
	mod, rest, _ := strings.Cut(name, ".")
	if !pythonStartup[mod] {
		return ""
	}
	const why = "is a module python imports while it starts (python -m nanosandbox_mcp puts the directory it starts in first on sys.path before runpy loads the standard library's %s), so it runs before the launcher's own code"
	switch {
	case rest == "":
		id, err := lstatIdent(p)
		if err != nil || !id.isDir() {
			if id.isLink() {
				return fmt.Sprintf(why, mod)
			}
			return ""
		}
		ents, _, err := listDir(p, 1<<16)
		if err != nil {
			return fmt.Sprintf(why, mod) // cannot tell: an __init__ may be among them
		}
		for _, e := range ents {
			if i, r, _ := strings.Cut(e.name, "."); i == "__init__" && pythonSuffix(r) {
				return fmt.Sprintf(why, mod)
			}
		}
		return ""
	case pythonSuffix(rest):
		if id, err := lstatIdent(p); err == nil && !id.isDir() {
			return fmt.Sprintf(why, mod)
		}
	}
	return ""
}

// pythonCandidate reports whether pythonRisk may find name a risk, by
// its name alone.
func pythonCandidate(name string) bool {
	mod, _, _ := strings.Cut(name, ".")
	return pythonStartup[mod] || len(name) >= len("nanosandbox") && strings.EqualFold(name[:len("nanosandbox")], "nanosandbox")
}

// pythonSuffix reports whether what follows a module's name and a dot is
// a suffix python imports a module from: py, pyc, or an extension
// module's (cpython-311-x86_64-linux-gnu.so, abi3.so, so).
func pythonSuffix(rest string) bool {
	return rest == "py" || rest == "pyc" || rest == "so" || strings.HasSuffix(rest, ".so")
}

// pep503 is name as PEP 503 normalises a distribution's: lower case, each
// run of "-", "_" and "." one "-".
func pep503(name string) string {
	var b strings.Builder
	sep := false
	for _, r := range strings.ToLower(name) {
		if r == '-' || r == '_' || r == '.' {
			sep = true
			continue
		}
		if sep && b.Len() > 0 {
			b.WriteByte('-')
		}
		sep = false
		b.WriteRune(r)
	}
	return b.String()
}

// launcherRisk says what a launcher element that a call made or changed
// would run at the user's next start, or "" when it runs nothing.
func launcherRisk(e element) string {
	if e.odd != "" {
		return "cannot be read safely (" + e.odd + "), and npx reads it when it starts this server"
	}
	if e.launch != "" {
		return e.launch
	}
	switch filepath.Base(e.path) {
	case "package.json":
		return packageRisk(e.content)
	case ".npmrc":
		return npmrcRisk(e.content)
	}
	return ""
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
// Compiled at first use, not at every start of the binary (a one-shot
// command reads no .npmrc).
var npmrcKey = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[ \t]*([a-z][a-z0-9-]*)[ \t]*=`) })

// npmrcLines splits an .npmrc as npm's reader (ini) does: at every run of
// CRs and LFs, a lone CR too.
var npmrcLines = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("[\r\n]+") })

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
	for _, line := range npmrcLines().Split(string(b), -1) {
		l := strings.TrimSpace(strings.TrimPrefix(line, "\ufeff"))
		if strings.ContainsFunc(l, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }) {
			return "holds a control character in a line, which npm's reader may take apart otherwise than this one"
		}
		if l == "" || l[0] == ';' || l[0] == '#' {
			continue
		}
		m := npmrcKey().FindStringSubmatch(l)
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
