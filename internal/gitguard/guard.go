package gitguard

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nanosandbox/nanosandbox-mcp/internal/logline"
)

// Root is a tree that commands can write.
type Root struct {
	Host    string // where it is on the host, canonical
	Sandbox string // where commands see it; "" when the same as Host
}

// Config says what a Guard watches. Paths are canonical host paths.
type Config struct {
	Roots []Root
	// Exempt paths lie in roots and were granted writable by name (a
	// --writable inside the workspace): what is in them is neither
	// protected nor judged, because the user said so.
	Exempt []string
	// Hidden paths lie in roots but commands cannot reach them (masked
	// credentials): they are not scanned.
	Hidden []string
	// Readable paths are those the user granted read-only: a remote of a
	// repository made in a call may lead there (a clone of a granted
	// repository), as what git fetch copies from there commands can read.
	Readable []string
	// Git is the host's git, the one the user's tools run, found where no
	// command can replace it (policy.FindProgram); if "", no config can be
	// judged harmless.
	Git string
	// Home is the user's home, for "~/" in config paths.
	Home string
	// GlobalConfigs are git's system and global config files: the user's,
	// trusted. Their core.hooksPath applies to every repository, and the
	// files they include that lie in a root are protected.
	GlobalConfigs []string
	// StateDir, if set, keeps the journal that lets the next server judge
	// what a call left when this one is killed during it.
	StateDir string
	// Log, if set, receives what the server's log should say.
	Log func(msg string)
	// Unmounted says nothing keeps a call's Protect read-only (a sandbox
	// without mounts, where the user gave git's carve-outs up by name):
	// Begin then makes no stand-ins, which a command could write in. What
	// a call changes is judged when it ends, as ever.
	Unmounted bool
}

// Protection is a path to keep read-only during a call.
type Protection struct {
	Path string // where commands see it
	Dir  bool
	Link bool // a symlink, kept as itself
}

// finder lists the candidates below the roots.
type finder interface {
	refresh() error
	candidates() []candidate
	// takeLinked returns, and forgets, the directories in git
	// directories that may hold a symbolic link made since it was last
	// asked (links.go).
	takeLinked() []string
	close()
}

// linked collects the directories a finder reports to takeLinked.
type linked map[string]bool

func (l *linked) add(dir string) {
	if *l == nil {
		*l = linked{}
	}
	(*l)[dir] = true
}

func (l *linked) take() []string {
	out := make([]string, 0, len(*l))
	for d := range *l {
		out = append(out, d)
	}
	*l = nil
	sort.Strings(out)
	return out
}

// Guard protects the user's git from what commands plant. It is safe for
// concurrent use; calls may overlap.
type Guard struct {
	cfg  Config
	list lister
	// checkIndex judges an index made or changed during a call (index.go).
	checkIndex indexChecker
	// rebuilt are the indexes the guard made anew (rebuildIndex) since no
	// call ran, as made: its own, not judged again.
	rebuilt map[string]ident
	// held are the trusted indexes as the calls running found them
	// (hidden.go), nil while no call runs.
	held map[string]heldIndex

	mu       sync.Mutex
	find     finder
	res      resolver
	listings map[string]listing
	seen     map[string]bool // listings used in this round
	// byContent lists configs by the digest of their content, so that a
	// thousand identical configs (git init's) cost one run of git.
	byContent map[[sha256.Size]byte]listing
	trusted   map[candidate][]element
	suspect   map[candidate]string // judged harmful and not made harmless
	// unmovable are the suspects that could not be moved aside: calls are
	// refused while they are there (unmovable.go).
	unmovable map[candidate]string
	unmov     unmovables
	// user marks the repositories that appeared while no call ran (all
	// of them at the first call): the user's, first in the protection
	// budget, before those commands made and a call trusted.
	user    map[candidate]bool
	running int
	// since is when the calls running began (a second early): what was
	// made after it, a command may have made.
	since int64
	// sinceMono is when since was taken, on the monotonic clock: what
	// the object watcher saw from then on counts as a call's.
	sinceMono time.Time
	// objw watches the loose objects of the trusted repositories, for a
	// guard that watches (Watch); nil otherwise.
	objw *objWatcher
	// treeSnaps is, for each trusted repository with tree paths, what
	// git last said of its refs and index, with the files it read then
	// (treerefs.go): a call that finds those as they were asks git nothing.
	treeSnaps map[candidate]*treeSnap
	// linkDirs are the directories in git directories to look in for
	// symbolic links when a call ends, links the trusted links in them by
	// name (links.go).
	linkDirs map[string]bool
	links    map[string]map[string]linkID
	// unjudged is when the calls began whose end could not check the
	// roots: the next call that can judges what was made since.
	unjudged int64
	ph       placeholders
	broken   error // why the roots cannot be checked; calls are refused
	journal  *journal
	pending  []string    // notes for the next call: what recovery did
	watch    bool        // keep the roots watched (Watch)
	launch   launchCache // what launchers read, by root
}

type listing struct {
	id      ident
	entries []entry
	err     error
}

// recoverOrphans judges what calls of a server that is gone left unjudged.
func (g *Guard) recoverOrphans() {
	since := g.journal.orphans(g.scanRoots())
	if since == 0 {
		return
	}
	g.logf("git guard: a server stopped during a call begun at %s; judging the git directories made or changed since", time.Unix(0, since).Format(time.RFC3339))
	g.pending = append(g.pending, g.recover(since, "left by a call the previous server did not finish")...)
}

// errNoWatch means the roots cannot be watched; walk them instead.
var errNoWatch = errors.New("cannot watch")

// global is the pseudo-candidate holding the user's own config files.
var global = candidate{entry: ""}

// New starts watching cfg.Roots. What it finds now is trusted.
func New(cfg Config) (*Guard, error) {
	if log := cfg.Log; log != nil {
		// Every line, logf's and the finder's, is escaped here: the
		// names in it are often a command's (logline).
		cfg.Log = func(msg string) { log(logline.Escape(msg)) }
	}
	g := &Guard{
		cfg:        cfg,
		list:       noGit,
		checkIndex: noIndexGit,
		rebuilt:    map[string]ident{},
		listings:   map[string]listing{},
		seen:       map[string]bool{},
		byContent:  map[[sha256.Size]byte]listing{},
		trusted:    map[candidate][]element{},
		suspect:    map[candidate]string{},
		unmovable:  map[candidate]string{},
		user:       map[candidate]bool{},
		ph:         placeholders{},
		launch:     launchCache{},
	}
	if cfg.Git != "" {
		g.list = gitLister(cfg.Git)
		g.checkIndex = gitIndexChecker(cfg.Git)
		stamp := ""
		if cfg.StateDir != "" {
			stamp = filepath.Join(cfg.StateDir, "git-scratch-swept")
		}
		go removeStaleScratch(stamp)
	}
	g.res = resolver{home: cfg.Home, list: g.listPaths, placeholder: g.ph.pristine,
		dirs: map[string]cachedDir{}, used: map[string]bool{}, packed: map[string]cachedPacked{},
		follow: func(p string) bool { k, _, _ := g.place(p); return k != outside || g.readable(p) }}
	for _, f := range cfg.GlobalConfigs {
		e, _ := g.res.config(f)
		if e.content == nil {
			continue
		}
		entries, err := g.listPaths(e.path, e.id, e.content)
		if err != nil {
			continue
		}
		for _, en := range entries {
			if en.Section == "core" && en.Subsection == "" && en.Name == "hookspath" && en.HasValue {
				g.res.globalHooks = append(g.res.globalHooks, en.Value)
			}
		}
	}
	roots := g.scanRoots()
	f, err := newFinder(roots, g.hidden, cfg.Log, false)
	if err != nil {
		return nil, err
	}
	g.find = f
	if cfg.StateDir != "" {
		j, err := openJournal(filepath.Join(cfg.StateDir, "git-calls"))
		if err != nil {
			g.logf("git guard: %v; a call cut short by a killed server will not be judged by the next one", err)
		}
		g.journal = j
		g.unmov = unmovables{dir: filepath.Join(cfg.StateDir, "git-unmovable")}
		for c, why := range g.unmov.load(func(p string) bool { k, _, _ := g.place(p); return k == inside }) {
			g.suspect[c], g.unmovable[c] = why, why
		}
		g.recoverOrphans()
	}
	return g, nil
}

// Watch keeps the roots watched from now on, so that a call costs what
// changed rather than what exists: for a server, which makes many calls.
// A guard starts out walking the roots at every call, because a single
// call is cheaper so: the kernel makes a process that closes watches wait
// for a grace period at exit (10-20 ms here), more than walking a small
// workspace twice.
func (g *Guard) Watch() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.watch {
		return nil
	}
	g.watch = true
	if g.objw == nil {
		g.objw = newObjWatcher()
	}
	if _, ok := g.find.(*pollFinder); !ok {
		return nil
	}
	f, err := newFinder(g.scanRoots(), g.hidden, g.cfg.Log, true)
	if err != nil {
		return err
	}
	g.find.close()
	g.find = f
	return nil
}

// Close stops watching.
func (g *Guard) Close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.find.close()
	g.journal.close()
	g.releaseIndexes()
	g.objw.close()
	g.objw = nil
}

// enclosing lists the repositories that hold a root: a .git in a directory
// above it, which git finds from the root and from everything below it.
// They are the user's, outside the roots; what their config names inside
// a root (a core.hooksPath in the workspace, as a monorepo's package has
// husky's) is protected and judged as a repository's in a root is.
func (g *Guard) enclosing() []candidate {
	var out []candidate
	seen := map[string]bool{}
	for _, r := range g.scanRoots() {
		for dir := filepath.Dir(r); !seen[dir]; dir = filepath.Dir(dir) {
			seen[dir] = true
			entry := filepath.Join(dir, ".git")
			if id, err := lstatIdent(entry); err == nil && id.exists() {
				out = append(out, candidate{entry: entry})
			}
			if dir == "/" {
				break
			}
		}
	}
	return out
}

// scanRoots are the roots to walk: none inside another.
func (g *Guard) scanRoots() []string {
	var out []string
	for _, r := range g.cfg.Roots {
		inside := false
		for _, o := range g.cfg.Roots {
			if o.Host != r.Host && within(r.Host, o.Host) {
				inside = true
			}
		}
		if !inside {
			out = append(out, r.Host)
		}
	}
	sort.Strings(out)
	return out
}

func (g *Guard) hidden(path string) bool {
	for _, h := range g.cfg.Hidden {
		if within(path, h) {
			return true
		}
	}
	return false
}

// placeKind is where a path lies for the guard.
type placeKind int

const (
	outside placeKind = iota // not in a root, or hidden from commands
	exempt                   // in a grant the user made writable by name
	inside                   // in a root, protected and judged
)

// place says where path lies, and the root (host path) and sandbox path
// when it is in one.
func (g *Guard) place(path string) (kind placeKind, root, sandbox string) {
	if path == "" || g.hidden(path) {
		return outside, "", ""
	}
	best := -1
	for i, r := range g.cfg.Roots {
		if within(path, r.Host) && (best < 0 || len(r.Host) > len(g.cfg.Roots[best].Host)) {
			best = i
		}
	}
	if best < 0 {
		return outside, "", ""
	}
	r := g.cfg.Roots[best]
	sandbox = path
	if r.Sandbox != "" && r.Sandbox != r.Host {
		rel, _ := filepath.Rel(r.Host, path)
		sandbox = filepath.Join(r.Sandbox, rel)
	}
	for _, e := range g.cfg.Exempt {
		if within(path, e) {
			return exempt, r.Host, sandbox
		}
	}
	return inside, r.Host, sandbox
}

// outside reports whether path lies outside every writable root.
func (g *Guard) outside(path string) bool {
	kind, _, _ := g.place(path)
	return kind == outside
}

// listCached lists a config file's content, once per state of the file.
func (g *Guard) listCached(path string, id ident, content []byte) ([]entry, error) {
	g.seen[path] = true
	if l, ok := g.listings[path]; ok && l.id == id && id.exists() {
		return l.entries, l.err
	}
	l := g.listContent(content)
	l.id = id
	g.listings[path] = l
	return l.entries, l.err
}

// listContent lists config content, once per content.
func (g *Guard) listContent(content []byte) listing {
	sum := sha256.Sum256(content)
	l, ok := g.byContent[sum]
	if !ok {
		l.entries, l.err = g.list(content)
		if len(g.byContent) >= maxByContent {
			clear(g.byContent)
		}
		g.byContent[sum] = l
	}
	return l
}

// listPaths lists a config file for what it points at (include.path,
// includeIf.*.path, core.hooksPath, core.worktree, every remote.* and
// remote.pushDefault, branch.*.remote and pushremote,
// extensions.partialClone). Git spells every key out in the file: one
// whose content names none of them points nowhere, and costs no run of
// git.
func (g *Guard) listPaths(path string, id ident, content []byte) ([]entry, error) {
	if !containsFold(content, "include") && !containsFold(content, "hookspath") && !containsFold(content, "worktree") && !containsFold(content, "url") && !containsFold(content, "remote") && !containsFold(content, "partialclone") {
		return nil, nil
	}
	return g.listCached(path, id, content)
}

// containsFold reports whether b contains the lowercase ASCII word w, in
// any case.
func containsFold(b []byte, w string) bool {
	return bytes.Contains(bytes.ToLower(b), []byte(w))
}

// maxByContent bounds the listings kept by content.
const maxByContent = 4096

// resolveAll resolves every candidate, and the user's own config files.
func (g *Guard) resolveAll() map[candidate][]element {
	g.seen = map[string]bool{}
	out := map[candidate][]element{}
	// The user's own config files first: what they name, includes
	// followed, applies to every repository (core.hooksPath).
	var gl []element
	var hooks []string
	seen := map[string]bool{}
	// dir is the directory of the file as git opened it (relative
	// includes are taken from a symlink's, not its target's).
	var add func(path, dir string, depth int)
	add = func(path, dir string, depth int) {
		if seen[path] || depth > maxIncludeDepth {
			return
		}
		seen[path] = true
		e, to := g.res.config(path)
		e.user = true
		if k, _, _ := g.place(path); k == inside || depth > 0 {
			gl = append(gl, e)
		}
		if to != "" {
			add(to, dir, depth+1)
			return
		}
		if e.content == nil {
			return
		}
		entries, err := g.listPaths(path, e.id, e.content)
		if err != nil {
			return
		}
		for _, en := range entries {
			switch {
			case (en.Section == "include" || en.Section == "includeif") && en.Name == "path" && en.HasValue:
				if p, err := g.res.configPath(en.Value, dir); err == nil && p != "" {
					add(p, g.res.openedDir(en.Value, dir, p), depth+1)
				}
			case en.Section == "core" && en.Subsection == "" && en.Name == "hookspath" && en.HasValue:
				hooks = append(hooks, en.Value)
			}
		}
	}
	for _, f := range g.cfg.GlobalConfigs {
		add(f, filepath.Dir(f), 0)
	}
	if len(g.cfg.GlobalConfigs) > 0 {
		g.res.globalHooks = hooks
	}
	// An absolute (or ~/) one is a hooks directory of every repository
	// the user's git runs in, anywhere, whether or not a repository in
	// the roots names it: where it lies in a root, it is kept and judged
	// as the user's own.
	for _, h := range hooks {
		if !filepath.IsAbs(h) && !strings.HasPrefix(h, "~/") {
			continue
		}
		p, err := g.res.configPath(h, "/")
		if err != nil || p == "" {
			continue
		}
		if k, _, _ := g.place(p); k != inside {
			continue
		}
		e, _ := g.res.hooks(roleHooksPath, p)
		e.user, e.raw = true, g.res.expand(h, "/")
		gl = append(gl, e)
	}
	for _, r := range g.scanRoots() {
		gl = append(gl, launchers(r, g.launch)...)
	}
	if len(gl) > 0 {
		out[global] = gl
	}
	for _, c := range g.find.candidates() {
		out[c] = g.res.resolve(c)
	}
	for _, c := range g.enclosing() {
		els := g.res.resolve(c)
		for i := range els {
			els[i].user = true
		}
		out[c] = els
	}
	for p := range g.listings {
		if !g.seen[p] {
			delete(g.listings, p)
		}
	}
	g.res.prune()
	return out
}

// refresh brings the candidates up to date. A finder that can no longer
// watch gives way to walking; one that cannot walk breaks the guard.
func (g *Guard) refresh() error {
	if g.broken != nil {
		// Try again: the user may have cleaned up.
		f, err := newFinder(g.scanRoots(), g.hidden, g.cfg.Log, g.watch)
		if err != nil {
			return err
		}
		g.find.close()
		g.find, g.broken = f, nil
		g.takeLinked()
		return nil
	}
	err := g.find.refresh()
	if errors.Is(err, errNoWatch) {
		g.logf("git guard: watching stopped (%v); the writable roots are walked on every call from now on", err)
		g.find.close()
		w := &pollFinder{roots: g.scanRoots(), skip: g.hidden}
		g.find = w
		err = w.refresh()
	}
	if err != nil {
		g.broken = err
		return err
	}
	g.takeLinked()
	return nil
}

// logf logs one line, its control characters escaped (logline.Sprintf):
// the paths and names in it are often a command's.
func (g *Guard) logf(format string, args ...any) {
	if g.cfg.Log != nil {
		g.cfg.Log(logline.Sprintf(format, args...))
	}
}

// within reports whether path is dir or below it.
func within(path, dir string) bool {
	if dir == "/" {
		return strings.HasPrefix(path, "/")
	}
	return path == dir || strings.HasPrefix(path, dir+"/")
}
