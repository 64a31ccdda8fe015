package gitguard

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// role is what a path is to the git directory that reads it.
type role uint8

const (
	roleEntry      role = iota // what git finds first: a .git entry, or a bare repository's directory
	roleGitdir                 // the git directory a .git entry leads to
	roleCommondir              // gitdir/commondir, which moves config and hooks elsewhere
	roleConfig                 // a config file git reads: config, config.worktree, an included file
	roleHooks                  // the hooks directory of a git directory (samples are inert)
	roleHooksPath              // a core.hooksPath directory (everything in it is a hook)
	roleWorktree               // the work tree core.worktree names, where git writes and deletes files
	roleOpState                // an operation git stopped in (rebase-merge, rebase-apply, sequencer): what it runs when it goes on
	roleRemotes                // remotes/ or branches/ of a common dir: remotes git reads when the config defines none
	roleRerere                 // MERGE_RR of a git directory: the paths rerere reads and writes when a merge's conflicts are resolved
	roleRemoteURL              // a place a remote's local URL leads git push and fetch to
	roleIndex                  // a git directory's index: every name in it is a path git writes and reads from the work tree (index.go)
	roleStray                  // the entries at the top of a git directory that git keeps no such entry as (gitdir.go)
	roleAlternates             // objects/info/alternates of a common dir: object stores git reads as the repository's own
	roleLauncher               // node_modules/nanosandbox-mcp of a root: what npx -y nanosandbox-mcp runs, started there (launcher.go)
	roleReplace                // the replace refs of a common dir, loose and packed: objects git shows in place of others (history.go)
	roleHistory                // info/grafts or shallow of a common dir: parents git gives commits in place of their own (history.go)
	roleRRCache                // rr-cache of a common dir: resolutions rerere applies to the user's next conflicting merge (history.go)
	roleInfo                   // info/exclude or info/attributes of a common dir: what git status and git diff ignore, and how they read files
)

func (r role) String() string {
	return [...]string{"entry", "gitdir", "commondir", "config", "hooks", "hooksPath", "worktree", "opState", "remotes", "rerere", "remoteURL", "index", "stray", "alternates", "launcher", "replace", "history", "rrCache", "info"}[r]
}

// Caps on what the guard reads from a writable root.
const (
	maxGitfileBytes = 8 << 10 // a .git file or commondir holds one path
	maxHooks        = 1024    // entries of a hooks directory
	maxIncludeDepth = 10      // as git's own limit
	maxStateBytes   = 4 << 20 // a to-do list of tens of thousands of commits
)

// element is one path through which git would run code for a candidate,
// and what is there now.
type element struct {
	role role
	path string // on the host
	id   ident  // the zero ident when absent
	// odd says why it cannot be read safely, or is "".
	odd string
	// content is a config file's content, entries a hooks directory's
	// (and an operation state directory's entries git keeps no file as),
	// files an operation state directory's decisive files (opStateFiles)
	// by name, those present.
	content []byte
	entries []dirEntry
	files   map[string][]byte
	// launch says what a launcher element would run at the user's next
	// start of the server (launcher.go), when being there is the risk.
	launch string
	// user marks what the user's own config names (their core.hooksPath,
	// what their global config includes): outside the roots it is theirs,
	// not a command's redirection.
	user bool
	// main marks a git directory's own config and hooks directory (not
	// config.worktree, includes or core.hooksPath).
	main bool
	// submodule marks a remote URL element that a submodule.*.url names:
	// where git submodule update clones from.
	submodule bool
	// wtConfig marks a git directory's config.worktree, which has a
	// stand-in while calls run where it is absent.
	wtConfig bool
	// raw is a redirection's path as git opens it (a core.hooksPath, a
	// core.worktree), before any symlink on it is followed.
	raw string
	// from is, for a linked worktree's work tree, the gitdir file that
	// names it: what is moved aside when the work tree must not be used
	// (git worktree repair and prune read every such file).
	from string
	// tree is, for a git directory or common dir in a work tree (oddInTree),
	// that work tree, and treeRel its path there.
	tree, treeRel string
}

// candidate is a place where git finds a repository: entry is dir/.git (of
// any kind), or, when bare, a directory git would take for a git directory
// itself.
type candidate struct {
	entry string
	bare  bool
}

// resolver follows a candidate to everything git would read from it.
type resolver struct {
	home string // the user's home, for "~/" in config paths
	// globalHooks are core.hooksPath values of the user's system and
	// global config, each relative to a repository's work tree or absolute.
	globalHooks []string
	list        func(path string, id ident, content []byte) ([]entry, error)
	// placeholder reports whether path is a stand-in the guard made, still
	// as made: it counts as absent.
	placeholder func(path string, id ident) bool
	// dirs caches hooks listings; used marks those used since the last
	// prune. Nil: no cache.
	dirs map[string]cachedDir
	used map[string]bool
	// packed caches the replace refs of packed-refs files, by the file's
	// state when read (history.go); pruned with dirs. Nil: no cache.
	packed map[string]cachedPacked
	// follow says whether the guard may read at path, a place a
	// redirection leads to: in the roots, or a read-only grant. Nil: no.
	follow func(path string) bool
	// gitdirOnce, set by resolve around the two readers of one git
	// directory's listing, keeps the first's for the second.
	gitdirOnce *gitdirListing
}

// gitdirListing is a git directory's listing, and its identity when read.
type gitdirListing struct {
	path string
	id   ident
	all  []dirEntry // nil: not read yet
}

// resolve returns the elements of c, in a stable order: its entry, its git
// directory, commondir, config files (with what they include), hooks and
// core.hooksPath directories, operation state and legacy remotes. It never
// follows a symlink to read a file, and stops at what it cannot read (odd
// set), as a failure to judge.
func (r *resolver) resolve(c candidate) []element {
	var out []element
	worktree := filepath.Dir(c.entry)
	var gitdir string
	if c.bare {
		id, _ := lstatIdent(c.entry)
		e := element{role: roleEntry, path: c.entry, id: ident{Kind: id.Kind, Dev: id.Dev, Ino: id.Ino}}
		out = append(out, e)
		if !id.isDir() {
			return out
		}
		gitdir, worktree = c.entry, c.entry
	} else {
		e, target := r.entry(c.entry)
		out = append(out, e)
		if e.odd != "" || target == "" {
			return out
		}
		gitdir = target
	}

	gid, err := lstatIdent(gitdir)
	g := element{role: roleGitdir, path: gitdir, id: ident{Kind: gid.Kind, Dev: gid.Dev, Ino: gid.Ino}}
	if err != nil {
		g.odd = err.Error()
	}
	out = append(out, g)
	if !gid.isDir() {
		return out // git finds no repository there
	}

	common := gitdir
	cd := element{role: roleCommondir, path: filepath.Join(gitdir, "commondir")}
	cd.id, err = lstatIdent(cd.path)
	switch {
	case err != nil:
		cd.odd = err.Error()
	case r.placeholder(cd.path, cd.id):
		cd.id = ident{}
	case cd.id.exists():
		b, id, err := readRegular(cd.path, maxGitfileBytes)
		cd.id = id
		if err != nil {
			cd.odd = err.Error()
			break
		}
		cd.id.Sum = contentSum(b)
		p := strings.TrimRight(string(b), "\r\n") // as git reads it
		if p == "" || strings.ContainsRune(p, 0) {
			cd.odd = "commondir holds no path"
			break
		}
		common, err = canonical(under(gitdir, p))
		switch {
		case err != nil:
			cd.odd = err.Error()
		case common != gitdir && !watchedAsGitdir(common):
			cd.odd = oddCommon
		}
	}
	out = append(out, cd)
	if cd.odd != "" {
		return out
	}

	seen := map[string]bool{}
	var hooksPaths []string // as written: relative ones are taken from the work tree
	// Every core.worktree value of every file read: git takes one of them
	// (config.worktree's only with extensions.worktreeConfig on), and each
	// is judged, so that a harmless one cannot stand in for another.
	var coreWorktrees []string
	// Every remote.*.url and remote.*.pushurl, with the file naming it;
	// the remotes named with a URL; and every branch.*.remote and
	// branch.*.pushremote, which git takes for a URL when no remote of
	// that name has one (remote.c, remote_get).
	var remoteURLs, branchRemotes [][2]string
	namedRemotes := map[string]bool{}
	// Every remote a key defines (remote.NAME.fetch alone will do), with
	// the file naming it: git takes a remote with no url by its name
	// (remote.c, add_url_alias), which git fetch --all and git remote
	// update fetch from, so "~/other" or "../../x" is a path.
	var definedRemotes [][2]string
	// Every submodule.*.url, with the file naming it: git submodule
	// update clones from there, as git fetch fetches from a remote.
	var submoduleURLs [][2]string
	// dir is the directory of the file as git opened it, which its
	// relative includes are taken from: a symlink's, not its target's.
	var addConfig func(path, dir string, depth int)
	addConfig = func(path, dir string, depth int) {
		if seen[path] || depth > maxIncludeDepth {
			return
		}
		seen[path] = true
		e, to := r.config(path)
		out = append(out, e)
		if to != "" {
			addConfig(to, dir, depth+1) // git reads through the symlink
			return
		}
		if e.content == nil {
			return
		}
		entries, err := r.list(e.path, e.id, e.content)
		if err != nil {
			return // judged as it is; nothing more to follow
		}
		for _, en := range entries {
			switch {
			case (en.Section == "include" || en.Section == "includeif") && en.Name == "path" && en.HasValue:
				switch p, err := r.configPath(en.Value, dir); {
				case err != nil:
					out = append(out, element{role: roleConfig, path: p, odd: err.Error()})
				case p != "":
					addConfig(p, r.openedDir(en.Value, dir, p), depth+1)
				}
			case en.Section == "core" && en.Subsection == "" && en.Name == "hookspath" && en.HasValue:
				hooksPaths = append(hooksPaths, en.Value)
			case en.Section == "core" && en.Subsection == "" && en.Name == "worktree" && en.HasValue:
				coreWorktrees = append(coreWorktrees, en.Value)
			case en.Section == "remote" && en.Subsection != "" && (en.Name == "url" || en.Name == "pushurl") && en.HasValue:
				remoteURLs = append(remoteURLs, [2]string{en.Value, path})
				if en.Name == "url" {
					namedRemotes[en.Subsection] = true
				}
				definedRemotes = append(definedRemotes, [2]string{en.Subsection, path})
			case en.Section == "remote" && en.Subsection != "":
				definedRemotes = append(definedRemotes, [2]string{en.Subsection, path})
			case en.Section == "branch" && en.Subsection != "" && (en.Name == "remote" || en.Name == "pushremote") && en.HasValue,
				// The promisor remote git fetches missing objects from
				// (git show, git log -p, git checkout), and the remote git
				// push pushes to: names of remotes, or URLs, as above.
				en.Section == "extensions" && en.Subsection == "" && en.Name == "partialclone" && en.HasValue,
				en.Section == "remote" && en.Subsection == "" && en.Name == "pushdefault" && en.HasValue:
				branchRemotes = append(branchRemotes, [2]string{en.Value, path})
			case en.Section == "submodule" && en.Subsection != "" && en.Name == "url" && en.HasValue:
				submoduleURLs = append(submoduleURLs, [2]string{en.Value, path})
			}
		}
	}
	addConfig(filepath.Join(common, "config"), common, 0)
	for i := range out {
		if out[i].role == roleConfig {
			out[i].main = true
			break
		}
	}
	wc := len(out)
	addConfig(filepath.Join(gitdir, "config.worktree"), gitdir, 0)
	if len(out) > wc {
		out[wc].wtConfig = true
	}

	// core.worktree moves the work tree (relative to the git directory),
	// and with it where a relative core.hooksPath points. The work tree is
	// where the user's git writes (checkout, restore, reset, stash) and
	// deletes (clean): an element, as a redirection is, found through
	// every symlink as git finds it, so that one swapped in later moves it.
	for _, b := range append(branchRemotes, definedRemotes...) {
		if !namedRemotes[b[0]] {
			remoteURLs = append(remoteURLs, b)
		}
	}
	// A relative one is taken from where git runs: the top of the work
	// tree, which core.worktree moves (each value is judged, as for
	// core.hooksPath), or a bare repository's own directory.
	tops := []string{worktree}
	for _, v := range coreWorktrees {
		if p, err := canonical(under(gitdir, v)); err == nil && !slices.Contains(tops, p) {
			tops = append(tops, p)
		}
	}
	for _, top := range tops {
		for _, u := range remoteURLs {
			out = append(out, r.remoteURL(u[0], u[1], top)...)
		}
		// Git submodule update takes a relative one from the top of the
		// work tree too (it clones from there).
		for _, u := range submoduleURLs {
			for _, e := range r.remoteURL(u[0], u[1], top) {
				e.submodule = true
				out = append(out, e)
			}
		}
	}
	worktrees := []string{worktree}
	if len(coreWorktrees) > 0 {
		worktrees = nil
	}
	// A linked worktree's git directory (.git/worktrees/ID) names its
	// work tree's .git file in gitdir: git worktree repair writes there,
	// and git worktree remove deletes the directory holding it.
	if wt, ok := linkedWorktree(gitdir); ok {
		out = append(out, wt)
		if wt.odd == "" {
			worktrees = append(worktrees, wt.path)
		}
	}
	for _, v := range coreWorktrees {
		// Taken as git takes it: from the git directory, "~" and all.
		wt := element{role: roleWorktree, raw: under(gitdir, v)}
		switch p, err := canonical(wt.raw); {
		case err != nil:
			wt.path, wt.odd = filepath.Clean(wt.raw), err.Error()
		default:
			worktrees = append(worktrees, p)
			wt.path = p
			id, err := lstatIdent(p)
			wt.id = ident{Kind: id.Kind, Dev: id.Dev, Ino: id.Ino}
			if err != nil {
				wt.odd = err.Error()
			} else if g := gitdirHolding(p); g != "" {
				wt.odd, wt.tree = oddTreeInGitdir, g
			}
		}
		out = append(out, wt)
	}
	addHooks := func(ro role, p string, user bool, raw string) {
		for i := 0; i <= maxIncludeDepth && p != "" && !seen[p]; i++ {
			seen[p] = true
			var e element
			e, p = r.hooks(ro, p)
			e.user, e.raw = user, raw
			raw = ""
			out = append(out, e)
		}
	}
	n := len(out)
	addHooks(roleHooks, filepath.Join(common, "hooks"), false, "")
	if len(out) > n {
		out[n].main = true
	}
	for i, hs := range [][]string{hooksPaths, r.globalHooks} {
		for _, h := range hs {
			for _, wt := range worktrees {
				switch p, err := r.configPath(h, wt); {
				case err != nil:
					out = append(out, element{role: roleHooksPath, path: p, odd: err.Error(), user: i == 1, raw: r.expand(h, wt)})
				case p != "":
					addHooks(roleHooksPath, p, i == 1, r.expand(h, wt))
				}
			}
		}
	}
	// A git directory, or the common dir holding its config and hooks,
	// that lies in a work tree other than below a .git is one the user's
	// own git writes into when it checks out, merges or resets: a branch
	// holding ".meta/hooks/post-checkout" puts a hook there, which git
	// runs at once. Git refuses to write a path with a .git component,
	// and only that. The work trees: the repository's own (a bare one has
	// none but what core.worktree names) and every one above it.
	own := worktrees
	if c.bare && len(coreWorktrees) == 0 {
		own = nil
	}
	for i := range out {
		var dir string
		switch out[i].role {
		case roleGitdir:
			dir = gitdir
		case roleCommondir:
			if common == gitdir {
				continue
			}
			dir = common
		default:
			continue
		}
		if wt, rel, ok := inWorkTree(dir, own, c.bare); ok && out[i].odd == "" {
			out[i].odd = oddInTree + " " + wt + " (as " + rel + ")"
			out[i].tree, out[i].treeRel = wt, rel
		}
	}
	for _, name := range opStateDirs {
		out = append(out, opStateDir(filepath.Join(gitdir, name)))
	}
	out = append(out, rerereRecord(filepath.Join(gitdir, "MERGE_RR")))
	// The index's shared parts and the stray entries come from one
	// listing of the git directory, taken for the first and kept for the
	// second while the directory's identity holds: as if both were listed
	// at once. (The guard's stand-ins move its times at every call, so the
	// listing cache, which waits for a second of settling, rarely holds.)
	r.gitdirOnce = &gitdirListing{path: gitdir}
	out = append(out, r.indexElement(gitdir), r.strayEntries(gitdir))
	r.gitdirOnce = nil
	out = append(out, r.alternatesFile(filepath.Join(common, "objects", "info", "alternates")))
	out = append(out, r.replaceRefs(common), historyFile(filepath.Join(common, "info", "grafts")),
		historyFile(filepath.Join(common, "shallow")), rrCache(filepath.Join(common, "rr-cache")))
	for _, name := range []string{"exclude", "attributes"} {
		out = append(out, infoFile(filepath.Join(common, "info", name)))
	}
	// Git reads remotes/NAME, then branches/NAME, for a remote its config
	// does not define: a URL, and refspecs for push and fetch.
	for _, name := range []string{"remotes", "branches"} {
		e, _ := r.hooks(roleRemotes, filepath.Join(common, name)) // a symlink is judged as itself
		out = append(out, e)
	}
	return out
}

// infoFile reads info/exclude or info/attributes of a common dir: git
// status takes every file info/exclude names for ignored, and git diff
// and git status read files as info/attributes says (-diff, binary, a
// diff driver, a filter, text conversion), and neither leaves a trace in
// the work tree. Git never writes either but for git init's template. Its
// identity is what lstat says of it: any change counts.
func infoFile(path string) element {
	e := element{role: roleInfo, path: path}
	id, err := lstatIdent(path)
	switch {
	case err != nil:
		e.odd = err.Error()
	case id.exists() && !id.isReg() && !id.isLink():
		e.odd = "it is not a regular file" // a link in a git directory is removed as such (links.go)
	}
	e.id = id
	return e
}

// oddCommon is a commondir's oddity when it names a directory the finders
// do not take for a git directory. Git keeps a repository's refs, reflogs,
// packed-refs, rr-cache and worktrees there, and needs only objects/ and
// refs/ in it; a symbolic link there is a way out for the user's git
// (links.go), and the finders look for links only in what they know for a
// git directory. Git itself only ever names one that holds HEAD too: the
// main git directory of a linked worktree, a bare repository.
const oddCommon = "it names a directory that is not a whole git directory (HEAD, objects/ and refs/)"

// oddInTree begins the oddity of a git directory or common dir that lies
// in a work tree where git writes into it; the work tree follows.
const oddInTree = "it lies, not below a .git directory, in the work tree"

// oddTreeInGitdir is the oddity of a work tree that is, or lies in, a git
// directory: a checkout there writes the git directory's hooks and
// config (hooks/pre-commit is a path git writes, there).
const oddTreeInGitdir = "it is, or lies in, a git directory"

// gitdirHolding returns the git directory (a .git, or a directory the
// finders take for one) that dir is or lies in, or "".
func gitdirHolding(dir string) string {
	if !filepath.IsAbs(dir) {
		return ""
	}
	for a := dir; ; a = filepath.Dir(a) {
		if strings.EqualFold(filepath.Base(a), ".git") || watchedAsGitdir(a) {
			return a
		}
		if a == filepath.Dir(a) {
			return ""
		}
	}
}

// inWorkTree reports the work tree, of own or of a repository above dir
// (a directory holding a .git entry), that dir lies in with no ".git"
// component on the way (git's verify_path refuses to write below one, in
// any case), and dir's path from it. For a bare repository, only own: one
// in another's work tree (a local remote an agent made to push to) is a
// danger only once the user's git pushes to it after checking out a
// branch that wrote its hooks, as running any program a branch holds is.
func inWorkTree(dir string, own []string, bare bool) (string, string, bool) {
	check := func(wt string) (string, bool) {
		rel, err := filepath.Rel(wt, dir)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			return "", false
		}
		for _, c := range strings.Split(rel, "/") {
			if strings.EqualFold(c, ".git") {
				return "", false
			}
		}
		return rel, true
	}
	for _, wt := range own {
		if rel, ok := check(wt); ok {
			return wt, rel, true
		}
	}
	if bare {
		return "", "", false
	}
	if !filepath.IsAbs(dir) {
		return "", "", false
	}
	for a := filepath.Dir(dir); ; a = filepath.Dir(a) {
		if id, err := lstatIdent(filepath.Join(a, ".git")); err == nil && id.exists() {
			if rel, ok := check(a); ok {
				return a, rel, true
			}
		}
		if a == filepath.Dir(a) {
			return "", "", false
		}
	}
}

// watchedAsGitdir reports whether the finders take the directory at path,
// by its own entries or its name, for a git directory (withGitdir).
func watchedAsGitdir(path string) bool {
	if markerOf(filepath.Base(path)) == hasDotgit {
		return true
	}
	var flags uint8
	for name, bit := range markers {
		if id, err := lstatIdent(filepath.Join(path, name)); err == nil && id.exists() {
			flags |= bit
		}
	}
	return gitLike(flags)
}

// opStateDirs are where git keeps, per git directory (so per worktree), an
// operation it stopped in: git rebase's (merge and apply backends) and git
// cherry-pick's or revert's. Honest git leaves them between calls (a
// conflict, an edit), and whoever runs --continue or --skip runs what
// they say.
var opStateDirs = []string{"rebase-merge", "rebase-apply", "sequencer"}

// stateFile is how git reads a file of an operation state directory when
// the operation goes on.
type stateFile uint8

const (
	// stateInert: read as object ids, ref names, counters, messages,
	// patches, author lines or switches (sequencer.c read_populate_opts,
	// builtin/rebase.c read_basic_state, builtin/am.c am_load): nothing
	// in it runs, or names a place git writes.
	stateInert        stateFile = iota + 1
	stateTodo                   // a to-do list, whose exec lines run
	stateStrategy               // a merge strategy: when not one of git's own, a program
	stateStrategyOpts           // its -X options, which git's scripted strategies hand to git read-tree
	stateApplyOpt               // options for git apply
	stateOpts                   // the cherry-pick options, config format
	// stateNumber: a number git counts with (read by strtol), which git's
	// own prompt (git-sh-prompt's __git_ps1) also puts into the shell's
	// prompt as it is, where a shell expands $(...) in it.
	stateNumber
)

// opStateFiles are the files git keeps in each state directory, from
// git 2.39 on, and how it reads them. Any other entry counts as a risk when
// a call makes or changes it: what git would read there is known by name,
// so a file this list does not know (a later git's, or one planted for a
// reader this list misses) is never taken for inert.
var opStateFiles = map[string]map[string]stateFile{
	"rebase-merge": withInert(map[string]stateFile{
		"git-rebase-todo": stateTodo, "strategy": stateStrategy, "strategy_opts": stateStrategyOpts,
		"msgnum": stateNumber, "end": stateNumber,
	}, "git-rebase-todo.backup", "done", "dropped", "message", "message-squash",
		"message-fixup", "current-fixups", "author-script", "amend", "stopped-sha", "patch",
		"rewritten-list", "rewritten-pending", "squash-onto", "refs-to-delete", "update-refs",
		"gpg_sign_opt", "cdate_is_adate", "ignore_date", "orig-head", "head", "verbose", "quiet",
		"signoff", "head-name", "onto", "autostash", "allow_rerere_autoupdate",
		"reschedule-failed-exec", "no-reschedule-failed-exec", "drop_redundant_commits",
		"keep_redundant_commits", "trailer", "interactive"),
	// Git am's, and git rebase's apply backend's; the patches are
	// numbered files (opStateInert).
	"rebase-apply": withInert(map[string]stateFile{
		"apply-opt": stateApplyOpt, "strategy": stateStrategy, "strategy_opts": stateStrategyOpts,
		"next": stateNumber, "last": stateNumber,
	}, "abort-safety", "applying", "author-script", "dirtyindex", "final-commit", "info", "keep",
		"messageid", "msg", "original-commit", "patch", "patch-merge-index",
		"quiet", "quoted-cr", "rebasing", "rerere-autoupdate", "rewritten", "scissors", "sign",
		"threeway", "utf8", "head-name", "onto", "orig-head", "head", "verbose",
		"allow_rerere_autoupdate", "gpg_sign_opt", "signoff", "autostash"),
	// Git reads sequencer/todo for a cherry-pick or revert, and takes
	// only pick or revert lines there.
	"sequencer": withInert(map[string]stateFile{"todo": stateTodo, "opts": stateOpts}, "head", "abort-safety"),
}

func withInert(m map[string]stateFile, inert ...string) map[string]stateFile {
	for _, n := range inert {
		m[n] = stateInert
	}
	return m
}

// stateKind is how git reads the entry name of the state directory dir.
// Zero: git keeps no such entry there.
func stateKind(dir, name string) stateFile {
	if k := opStateFiles[dir][name]; k != 0 {
		return k
	}
	if dir == "rebase-apply" && name != "" && strings.Trim(name, "0123456789") == "" {
		return stateInert // git am's patches, 0001 on
	}
	return 0
}

// maxStateEntries bounds a state directory's listing: git am keeps one
// file per patch.
const maxStateEntries = 200_000

// opStateDir reads an operation state directory element: its identity is
// the directory's, and a digest of the files that decide what git runs or
// writes (their content) and of the entries git keeps no such file as
// (their identity), so that it changes when what git would do does, and
// not at every step git records. files holds the content of the first;
// unknown names the others.
func opStateDir(path string) element {
	e := element{role: roleOpState, path: path}
	id, err := lstatIdent(path)
	switch {
	case err != nil:
		e.odd = err.Error()
		return e
	case !id.exists():
		return e
	case !id.isDir():
		e.id = id
		e.odd = "it is not a directory"
		return e
	}
	e.id = ident{Kind: id.Kind, Dev: id.Dev, Ino: id.Ino}
	ents, _, err := listDir(path, maxStateEntries)
	if err != nil {
		e.odd = err.Error()
		return e
	}
	dir := filepath.Base(path)
	for _, en := range ents {
		if stateKind(dir, en.name) == 0 {
			e.entries = append(e.entries, en)
		}
	}
	if err := statEach(path, id, e.entries); err != nil {
		e.odd = err.Error()
		return e
	}
	e.files = map[string][]byte{}
	var all bytes.Buffer
	for _, en := range e.entries {
		fmt.Fprintf(&all, "?%s\x00%v\x00", en.name, en.id)
	}
	for _, en := range ents {
		switch stateKind(dir, en.name) {
		case stateInert, 0:
		default:
			b, _, err := readRegular(filepath.Join(path, en.name), maxStateBytes)
			if err != nil {
				e.odd = err.Error()
				return e
			}
			e.files[en.name] = b
			fmt.Fprintf(&all, "%s\x00%d\x00%s", en.name, len(b), b)
		}
	}
	e.id.Sum = contentSum(all.Bytes())
	return e
}

// rerereRecord reads a git directory's MERGE_RR, where rerere keeps the
// conflicts of a merge under way: a record per path, which the user's git
// commit (rerere, after it) reads, and copies into rr-cache when it holds
// no conflict, or overwrites with a recorded resolution. Git takes each
// path as written, from the work tree, ".." and all, and never checks it
// against the index: the record is where it reads and writes. Its identity
// is its content.
func rerereRecord(path string) element {
	e := element{role: roleRerere, path: path}
	id, err := lstatIdent(path)
	switch {
	case err != nil:
		e.odd = err.Error()
		return e
	case !id.exists() || id.isLink():
		return e // a link in a git directory is removed as such (links.go)
	}
	b, _, err := readRegular(path, maxStateBytes)
	if err != nil {
		e.id = id
		e.odd = err.Error()
		return e
	}
	e.id = ident{Kind: id.Kind, Sum: contentSum(b)}
	return e
}

// remoteURL returns the elements of a remote URL, as the config file from
// names it, for a repository whose git runs from top (the top of its work
// tree, or a bare repository's directory): none unless git takes the URL
// for a local repository. Then git push runs git-receive-pack there, which
// writes the refs pushed and runs that repository's hooks, and git fetch
// and pull copy what is there into this one. Git-upload-pack and
// git-receive-pack open the path (enter_repo, "~" expanded) as PATH/.git,
// PATH, PATH.git/.git or PATH.git, the first that is a repository: each is
// an element, found through every symlink as git finds it.
func (r *resolver) remoteURL(u, from, top string) []element {
	p, odd := localURL(u)
	if p == "" && odd == "" {
		return nil
	}
	switch {
	case odd != "":
	case p == "~" || strings.HasPrefix(p, "~/"):
		p = r.home + p[1:]
		if r.home == "" {
			odd = "it names the home of a user who has none"
		}
	case strings.HasPrefix(p, "~"):
		odd = "it names another user's home"
	case !filepath.IsAbs(p):
		p = filepath.Join(top, p)
	}
	if odd != "" {
		return []element{{role: roleRemoteURL, path: from, raw: u, odd: odd, from: from}}
	}
	var out []element
	for _, suffix := range []string{"/.git", "", ".git/.git", ".git"} {
		raw := strings.TrimSuffix(p, "/") + suffix
		e := element{role: roleRemoteURL, raw: raw, from: from}
		switch c, err := canonical(raw); {
		case err != nil:
			e.path, e.odd = filepath.Clean(raw), err.Error()
		default:
			e.path = c
			id, err := lstatIdent(c)
			e.id = ident{Kind: id.Kind, Dev: id.Dev, Ino: id.Ino}
			if err != nil {
				e.odd = err.Error()
			}
			if id.isReg() {
				// Git's local transport takes a file there for a .git
				// file (enter_repo, read_gitfile): the repository is
				// where it leads, judged as the URL is.
				out = append(out, r.gitfileURL(c, raw, from))
			}
		}
		out = append(out, e)
	}
	return out
}

// gitfileURL is the place a file at a remote's local URL leads git's
// transport to when it reads as a .git file: an element judged as the
// URL itself, odd where it cannot be read. It is read only where the
// guard reads (follow: the roots, a read-only grant): elsewhere the path
// is a command's choice, and what is there by the time it is opened can
// be a FIFO or a file on a mount that never answers, which would hold the
// call's end. Unread, it is odd, as one that cannot be read is.
func (r *resolver) gitfileURL(file, raw, from string) element {
	e := element{role: roleRemoteURL, path: file, raw: raw, from: from}
	if r.follow == nil || !r.follow(file) {
		e.odd = oddUnread
		return e
	}
	b, _, err := readRegular(file, maxGitfileBytes)
	if err != nil {
		e.odd = err.Error()
		return e
	}
	if !bytes.HasPrefix(b, []byte("gitdir: ")) {
		return element{role: roleRemoteURL, path: file, raw: raw, from: from}
	}
	target, err := parseGitfile(b, filepath.Dir(file))
	if err != nil {
		e.odd = err.Error()
		return e
	}
	e.path = target
	id, err := lstatIdent(target)
	e.id = ident{Kind: id.Kind, Dev: id.Dev, Ino: id.Ino}
	if err != nil {
		e.odd = err.Error()
	}
	return e
}

// oddUnread is the oddity of a file outside what the guard reads.
const oddUnread = "it lies outside the writable roots and the read-only grants, where the sandbox reads nothing"

// localURL returns the path a remote URL names when git takes it for a
// local repository (transport.c transport_get, connect.c
// parse_connect_url), or "" when it does not: a remote helper's address
// (NAME::...), a URL of a scheme other than file, or host:path over ssh.
// A file:// URL is percent-decoded as git decodes it; one that does not
// decode is odd.
func localURL(u string) (path, odd string) {
	i := 0
	for i < len(u) && isSchemeChar(i == 0, u[i]) {
		i++
	}
	if strings.HasPrefix(u[i:], "::") {
		return "", ""
	}
	if i > 0 && strings.HasPrefix(u[i:], "://") {
		if u[:i] != "file" {
			return "", ""
		}
		rest, err := url.PathUnescape(u[i+3:])
		if err != nil {
			return "", "its file URL does not decode"
		}
		// The path starts at the first slash after the host, which git
		// passes over (connect.c host_end, then strchr(end, '/')):
		// file://localhost/x and file://anything/x are /x. A host in
		// brackets ([::1], user@[::1]) ends at its "]".
		start, end := 0, 0
		if at := strings.Index(rest, "@["); at >= 0 {
			start = at + 1
		}
		if strings.HasPrefix(rest[start:], "[") {
			if j := strings.IndexByte(rest[start+1:], ']'); j >= 0 {
				end = start + 1 + j
			}
		}
		slash := strings.IndexByte(rest[end:], '/')
		if slash < 0 {
			return "", "" // no path: git fails
		}
		return rest[end+slash:], ""
	}
	colon, slash := strings.IndexByte(u, ':'), strings.IndexByte(u, '/')
	if colon < 0 || slash >= 0 && slash < colon {
		return u, ""
	}
	return "", ""
}

// isSchemeChar is git's is_urlschemechar.
func isSchemeChar(first bool, c byte) bool {
	alpha := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
	if first {
		return alpha
	}
	return alpha || c >= '0' && c <= '9' || c == '+' || c == '.' || c == '-'
}

// linkedWorktree reads gitdir/gitdir, which a linked worktree's git
// directory holds: the path of its work tree's .git file, which git reads
// with trailing white space dropped and "/.git" taken off. The element is
// the work tree. A relative path, which versions of git read from
// different places, cannot be judged.
func linkedWorktree(gitdir string) (element, bool) {
	path := filepath.Join(gitdir, "gitdir")
	e := element{role: roleWorktree, path: path, from: path}
	id, err := lstatIdent(path)
	switch {
	case err != nil:
		e.odd = err.Error()
		return e, true
	case !id.exists():
		return e, false
	}
	b, _, err := readRegular(path, maxGitfileBytes)
	if err != nil {
		e.odd = err.Error()
		return e, true
	}
	p := strings.TrimRight(string(b), " \t\r\n\v\f")
	switch {
	case p == "" || strings.ContainsRune(p, 0):
		e.odd = "a linked worktree's gitdir holds no path"
		return e, true
	case !filepath.IsAbs(p):
		e.odd = "a linked worktree's gitdir holds a relative path"
		return e, true
	}
	wt, err := canonical(strings.TrimSuffix(p, "/.git"))
	if err != nil {
		e.odd = err.Error()
		return e, true
	}
	e.path = wt
	wid, err := lstatIdent(e.path)
	e.id = ident{Kind: wid.Kind, Dev: wid.Dev, Ino: wid.Ino}
	if err != nil {
		e.odd = err.Error()
	} else if g := gitdirHolding(wt); g != "" {
		e.odd, e.tree = oddTreeInGitdir, g
	}
	return e, true
}

// entry reads a .git entry: a directory is the git directory; a file says
// "gitdir: PATH"; a symlink is followed as git follows it, to either.
func (r *resolver) entry(path string) (element, string) {
	e := element{role: roleEntry, path: path}
	id, err := lstatIdent(path)
	if err != nil {
		e.odd = err.Error()
		return e, ""
	}
	switch {
	case !id.exists():
		return e, ""
	case id.isDir():
		e.id = ident{Kind: id.Kind, Dev: id.Dev, Ino: id.Ino}
		return e, path
	case id.isReg():
		b, id, err := readRegular(path, maxGitfileBytes)
		e.id = id
		if err != nil {
			e.odd = err.Error()
			return e, ""
		}
		e.id.Sum = contentSum(b)
		target, err := parseGitfile(b, filepath.Dir(path))
		if err != nil {
			e.odd = err.Error()
			return e, ""
		}
		return e, target
	case id.isLink():
		e.id = id
		link, err := readLink(path)
		if err != nil {
			e.odd = err.Error()
			return e, ""
		}
		e.id.Sum = contentSum([]byte(link))
		to, err := canonical(path)
		if err != nil {
			e.odd = err.Error()
			return e, ""
		}
		tid, err := lstatIdent(to)
		switch {
		case err != nil:
			e.odd = err.Error()
		case !tid.exists():
			return e, ""
		case tid.isDir():
			return e, to
		case tid.isReg():
			b, _, err := readRegular(to, maxGitfileBytes)
			if err != nil {
				e.odd = err.Error()
				return e, ""
			}
			target, err := parseGitfile(b, filepath.Dir(path))
			if err != nil {
				e.odd = err.Error()
				return e, ""
			}
			return e, target
		default:
			e.odd = "it leads to a special file"
		}
		return e, ""
	default:
		e.id = id
		e.odd = "it is a special file"
		return e, ""
	}
}

// parseGitfile reads a .git file as git does: "gitdir: " then a path,
// trailing newlines and carriage returns dropped, relative to the file's
// directory. The target is returned canonical.
func parseGitfile(b []byte, dir string) (string, error) {
	rest, ok := bytes.CutPrefix(b, []byte("gitdir: "))
	if !ok {
		return "", errors.New("not a gitdir file")
	}
	rest = bytes.TrimRight(rest, "\r\n")
	if len(rest) == 0 || bytes.IndexByte(rest, 0) >= 0 {
		return "", errors.New("a gitdir file with no path")
	}
	return canonical(under(dir, string(rest)))
}

// config reads a config file element. A symlink is an element of its own,
// and its target (returned) another: git reads through it.
func (r *resolver) config(path string) (element, string) {
	e := element{role: roleConfig, path: path}
	id, err := lstatIdent(path)
	switch {
	case err != nil:
		e.odd = err.Error()
	case !id.exists():
	case r.placeholder(path, id):
	case id.isLink():
		return r.link(e, id)
	case !id.isReg():
		e.id = id
		e.odd = "it is not a regular file"
	default:
		b, id, err := readRegular(path, maxConfigBytes)
		e.id = id
		if err != nil {
			e.odd = err.Error()
			break
		}
		if b == nil {
			b = []byte{}
		}
		e.content = b
	}
	return e, ""
}

// link records a symlink as an element, and returns where it leads.
func (r *resolver) link(e element, id ident) (element, string) {
	e.id = id
	l, err := readLink(e.path)
	if err != nil {
		e.odd = err.Error()
		return e, ""
	}
	e.id.Sum = contentSum([]byte(l))
	to, err := canonical(e.path)
	if err != nil {
		e.odd = err.Error()
		return e, ""
	}
	return e, to
}

// hooks reads a hooks directory element, or another directory whose every
// entry counts (remotes/, branches/). A symlink is an element of its own,
// and its target (returned) another.
func (r *resolver) hooks(ro role, path string) (element, string) {
	e := element{role: ro, path: path}
	id, err := lstatIdent(path)
	switch {
	case err != nil:
		e.odd = err.Error()
	case !id.exists():
	case r.placeholder(path, id):
	case id.isLink():
		return r.link(e, id)
	case !id.isDir():
		e.id = id
		e.odd = "it is not a directory"
	default:
		// A listing is read again only when the directory changed: its
		// times move with every entry added, removed or renamed (a second
		// of settling covers coarse timestamps). What each entry is
		// (inode, size, times) is read every time: a hook rewritten in
		// place changes no listing, and a hooks directory is not always
		// read-only during a call (Config.Unmounted, or one past
		// maxProtections).
		did := id
		did.Size = 0 // a directory's size says nothing more than its listing
		var ents []dirEntry
		if c, ok := r.dirs[path]; ok && c.id == did && time.Now().UnixNano()-id.Ctime > int64(time.Second) {
			ents = append([]dirEntry(nil), c.ents...)
		} else {
			l, lid, err := listDir(path, maxHooks)
			if err != nil {
				e.id = id
				e.odd = err.Error()
				break
			}
			lid.Size = 0
			did, ents = lid, l
			if r.dirs != nil {
				r.dirs[path] = cachedDir{id: did, ents: append([]dirEntry(nil), l...)}
			}
		}
		if r.dirs != nil {
			r.used[path] = true
		}
		if err := statEach(path, did, ents); err != nil {
			e.id = id
			e.odd = err.Error()
			break
		}
		e.id, e.entries = did, ents
		e.id.Sum = listingSum(ents)
	}
	return e, ""
}

// cachedDir is a listing, and the directory's state when it was read.
type cachedDir struct {
	id   ident
	ents []dirEntry
}

// prune forgets listings not used since the last prune.
func (r *resolver) prune() {
	for p := range r.dirs {
		if !r.used[p] {
			delete(r.dirs, p)
		}
	}
	for p := range r.packed {
		if !r.used[p] {
			delete(r.packed, p)
		}
	}
	r.used = map[string]bool{}
}

// openedDir is the directory of the file a config value v names (from
// dir), as git opens it: v's directory part resolved, not p's, where p is
// the file resolved (the last part may be a symlink elsewhere).
func (r *resolver) openedDir(v, dir, p string) string {
	d := "."
	if i := strings.LastIndex(v, "/"); i > 0 {
		d = v[:i]
	} else if i == 0 {
		d = "/"
	}
	if o, err := r.configPath(d, dir); err == nil && o != "" {
		return o
	}
	return filepath.Dir(p)
}

// configPath resolves a path from a config value as git does: "~/" is the
// user's home, a relative path is taken from base. Values git would not
// resolve to a file here ("~user/", "%(prefix)/") give "". A path that
// cannot be resolved safely gives an error, with the path as written, for
// an element that says so.
func (r *resolver) configPath(v, base string) (string, error) {
	x := r.expand(v, base)
	if x == "" {
		return "", nil
	}
	p, err := canonical(x)
	if err != nil {
		return filepath.Clean(x), err
	}
	return p, nil
}

// expand is a config value's path as git opens it, unresolved: "~/" is
// the user's home, a relative path is taken from base; "" for values git
// would not resolve to a file here.
func (r *resolver) expand(v, base string) string {
	switch {
	case v == "":
		return ""
	case v == "~" || strings.HasPrefix(v, "~/"):
		if r.home == "" {
			return ""
		}
		v = r.home + "/" + strings.TrimPrefix(strings.TrimPrefix(v, "~"), "/")
	case strings.HasPrefix(v, "~"), strings.HasPrefix(v, "%(prefix)/"):
		return ""
	}
	return under(base, v)
}

// canonical resolves p as the kernel does when git opens it: component by
// component from the root, each symlink replaced by its target when it is
// met, and ".." taken from the place reached so far, never from the text
// ("L/../x" with L a symlink is beside L's target, not beside L). It uses
// lstat and readlink only (nothing is opened). Past a missing component the
// rest is kept as written, unless it climbs back with "..", which the
// kernel could not resolve and the guard will not guess: an error, as a
// loop of symlinks is.
func canonical(p string) (string, error) { return resolvePath(p, nil) }

// resolvePath is canonical, calling link, if set, with each symlink it
// meets on the way, before following it.
func resolvePath(p string, link func(string)) (string, error) {
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("resolve %q: not an absolute path", p)
	}
	const maxLinks = 40 // as the kernel's
	links := 0
	rest := strings.Split(p, "/")
	cur := "/"
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		id, err := lstatIdent(next)
		if err != nil {
			return "", fmt.Errorf("resolve %q: %w", p, err)
		}
		switch {
		case !id.exists() || !id.isDir() && !id.isLink() && !onlyDots(rest):
			// Git finds nothing there, or below a file.
			for _, r := range rest {
				if r == ".." {
					return "", fmt.Errorf("resolve %q: %s is not a directory, and the path climbs back past it", p, next)
				}
			}
			return filepath.Join(append([]string{next}, rest...)...), nil
		case id.isLink():
			if links++; links > maxLinks {
				return "", fmt.Errorf("resolve %q: too many levels of symbolic links", p)
			}
			if link != nil {
				link(next)
			}
			to, err := readLink(next)
			if err != nil {
				return "", fmt.Errorf("resolve %q: %w", p, err)
			}
			if filepath.IsAbs(to) {
				cur = "/"
			}
			rest = append(strings.Split(to, "/"), rest...)
		default:
			if perProcess(next) {
				return "", fmt.Errorf("resolve %q: it leads through %s, which names another place to git than to the sandbox", p, next)
			}
			cur = next
		}
	}
	return cur, nil
}

// onlyDots reports whether every component is empty or ".".
func onlyDots(parts []string) bool {
	for _, c := range parts {
		if c != "" && c != "." {
			return false
		}
	}
	return true
}

// under joins a path read from a writable root to the directory it is
// relative to without cleaning it: canonical must see its ".." where the
// kernel does.
func under(dir, rel string) string {
	if filepath.IsAbs(rel) {
		return rel
	}
	return dir + "/" + rel
}
