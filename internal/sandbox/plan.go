package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"

	"github.com/nanosandbox/nanosandbox-mcp/internal/gitguard"
	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
)

// opKind is one kind of step in building the mount tree. The order of the
// constants breaks ties between steps at the same path depth: a later kind
// covers an earlier one.
type opKind int

const (
	opTmpfs   opKind = iota // a private, empty, writable tmpfs (/tmp, /var/tmp, /run)
	opHide                  // an empty tmpfs, read-only once setup ends (a hidden home, a masked directory)
	opMask                  // an empty read-only file over a file
	opBindRO                // a host path shown again, read-only
	opBindRW                // a host path shown again, writable
	opPin                   // a directory bound onto itself, so it cannot be renamed or removed
	opProtect               // a path bound onto itself read-only: a carve-out in a writable root
)

func (k opKind) String() string {
	return [...]string{"tmpfs", "hide", "mask", "bind-ro", "bind-rw", "pin", "protect"}[k]
}

// mountOp is one step, run in order by the helper. Paths are as the command
// sees them, which is also where they are on the host.
type mountOp struct {
	Kind opKind `json:"k"`
	Path string `json:"p"`
	Src  string `json:"s,omitempty"` // host source of a bind; Path if empty
	Dir  bool   `json:"d,omitempty"`
	Mode uint32 `json:"m,omitempty"` // root mode of a tmpfs
	Size int64  `json:"z,omitempty"` // size of a tmpfs in bytes; 0 for the kernel's default (half of RAM)
	// Make allows the helper to create a missing mount point for this step,
	// because it lies in a tree the sandbox owns (a tmpfs it made, or the
	// private home). Elsewhere a missing target is an error.
	Make bool `json:"mk,omitempty"`
	// Link marks a protected symlink, bound onto itself (a .git, hooks or
	// config symlink of a repository): it cannot be removed or replaced.
	Link bool `json:"l,omitempty"`
}

func depth(p string) int {
	if p == "/" {
		return 0
	}
	return strings.Count(p, "/")
}

// sortOps orders steps so that a deeper path is mounted after a shallower
// one, and at equal depth by kind. Pins come before every carve-out below
// them because they are shallower: a pin made after a carve-out would cover
// it and leave it writable again (DESIGN.md §3).
func sortOps(ops []mountOp) {
	sort.SliceStable(ops, func(i, j int) bool {
		di, dj := depth(ops[i].Path), depth(ops[j].Path)
		if di != dj {
			return di < dj
		}
		return ops[i].Kind < ops[j].Kind
	})
}

// fsInfo is what planning reads from the host filesystem; tests fake it.
type fsInfo interface {
	// Lstat reports whether path exists and whether it is a directory,
	// without following a final symlink (a symlink reports exists, !dir).
	Lstat(path string) (exists, dir, symlink bool)
	ReadDir(path string) []string
	ReadFile(path string) ([]byte, error)
	// Readlink returns the target of the symbolic link at path.
	Readlink(path string) (string, error)
	// Owner returns the uid owning what path names (not following a
	// final symlink), or -1.
	Owner(path string) int
}

type hostFS struct{}

func (hostFS) Lstat(p string) (exists, dir, symlink bool) {
	fi, err := os.Lstat(p)
	if err != nil {
		return false, false, false
	}
	return true, fi.IsDir(), fi.Mode()&os.ModeSymlink != 0
}

func (hostFS) ReadDir(p string) []string {
	ents, err := os.ReadDir(p)
	if err != nil {
		return nil
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func (hostFS) ReadFile(p string) ([]byte, error) { return os.ReadFile(p) }

func (hostFS) Readlink(p string) (string, error) { return os.Readlink(p) }

func (hostFS) Owner(p string) int {
	fi, err := os.Lstat(p)
	if err != nil {
		return -1
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}

// staticPlan is the part of the mount tree that calls share while the
// host stays as it was: private directories, the hidden home, credential
// masks and grants.
type staticPlan struct {
	ops      []mountOp
	writable []string // writable roots inside the sandbox, for Landlock
	// homeAliases are the other mounts of the caller's whole home, which
	// no writable grant may contain (checkAliasGrants).
	homeAliases []string
	// seen is what the host answered while the plan was made (which
	// credentials existed, which homes /home held): the plan holds as
	// long as the host answers the same (current).
	seen fsRecord
	// check is how seen is checked, worked out from seen once, at the
	// first call that checks it: every later call only asks.
	check *lazyCheck
}

// planStatic computes the steps calls share.
func planStatic(p *policy.Policy, host fsInfo) staticPlan {
	var sp staticPlan
	fsys := &recordFS{fsInfo: host}
	var regions []region
	aliases, once := findAliases(p, fsys)

	for _, d := range policy.PrivateDirs {
		if exists, dir, _ := fsys.Lstat(d); exists && dir {
			sp.ops = append(sp.ops, mountOp{Kind: opTmpfs, Path: d, Dir: true, Mode: privateDirMode(d), Size: p.Limits.TmpBytes})
			regions = append(regions, region{d, true})
			sp.writable = append(sp.writable, d)
		}
	}
	if p.Home != "" && !p.HomeGranted {
		if p.PrivateHome != "" {
			sp.ops = append(sp.ops, mountOp{Kind: opBindRW, Path: p.Home, Src: p.PrivateHome, Dir: true})
			sp.writable = append(sp.writable, p.Home)
		} else {
			sp.ops = append(sp.ops, mountOp{Kind: opHide, Path: p.Home, Dir: true, Mode: 0o755})
		}
		regions = append(regions, region{p.Home, true})
	}
	if h := p.AccountHome; h != "" && !policy.Within(h, p.Home) {
		sp.ops = append(sp.ops, mountOp{Kind: opHide, Path: h, Dir: true, Mode: 0o755})
		regions = append(regions, region{h, true})
	}
	for _, a := range aliases[p.Home] {
		if !a.Part {
			sp.homeAliases = append(sp.homeAliases, a.Path)
		}
	}
	// Where another mount shows a hidden tree, it is hidden there too: an
	// empty directory, read-only. (Hidden by the object, not the path.)
	var hiddenTrees []string
	for _, r := range regions {
		hiddenTrees = append(hiddenTrees, r.path)
	}
	shown := map[string]bool{} // paths a grant shows as the user asked
	for _, g := range p.Grants {
		shown[g.Path] = true
	}
	aliasSeen := map[string]bool{}
	for _, t := range hiddenTrees {
		for _, a := range aliases[t] {
			if aliasSeen[a.Path] || shown[a.Path] || hiddenAt(regions, a.Path) {
				continue
			}
			aliasSeen[a.Path] = true
			if _, dir, _ := fsys.Lstat(a.Path); !dir {
				sp.ops = append(sp.ops, mountOp{Kind: opMask, Path: a.Path})
				continue
			}
			sp.ops = append(sp.ops, mountOp{Kind: opHide, Path: a.Path, Dir: true, Mode: 0o755})
			regions = append(regions, region{a.Path, true})
		}
	}
	// The workspace's parent, when it lies inside the home and is not the
	// home itself: inside, the home is the private home, and a sibling of
	// the workspace written there (../NOTES.md, git worktree add ../x)
	// would land in the private home, where the user never sees it. An
	// empty read-only tree there instead, the workspace and the grants
	// below it shown again, makes such a write fail and be explained.
	// Not where the parent lies in a dot directory of the home (a
	// workspace in ~/.config/nvim): the tools' own trees there stay the
	// private home's, writable (the git settings the server carries are
	// in ~/.config/git).
	rel, _ := filepath.Rel(p.Home, filepath.Dir(p.Workspace))
	if parent := filepath.Dir(p.Workspace); p.PrivateHome != "" && parent != p.Home && policy.Within(parent, p.Home) && !strings.HasPrefix(rel, ".") {
		granted := false
		for _, g := range p.Grants {
			granted = granted || policy.Within(parent, g.Path)
		}
		if !granted {
			sp.ops = append(sp.ops, mountOp{Kind: opHide, Path: parent, Dir: true, Mode: 0o755})
			regions = append(regions, region{parent, true})
		}
	}
	for _, g := range p.Grants {
		regions = append(regions, region{g.Path, false})
	}
	// inRegion returns the deepest region holding path, or nil for the host view.
	inRegion := func(path string) *region {
		var best *region
		for i := range regions {
			r := &regions[i]
			if policy.Within(path, r.path) && (best == nil || len(r.path) >= len(best.path)) {
				best = r
			}
		}
		return best
	}

	// The server's state directory (every workspace's private home, the
	// git guard's journal) is hidden wherever a command would see it: in
	// a --read-only home, where XDG_CACHE_HOME lies outside the home, and
	// where another mount shows it; but where a grant names it. The
	// call's own private home is bound at the home's path from the host's
	// tree, which this does not cover.
	if sd := p.StateDir; sd != "" && !shown[sd] {
		visible := func(path string) bool {
			r := inRegion(path)
			return r == nil || !r.hidden
		}
		if exists, dir, _ := fsys.Lstat(sd); exists && dir && visible(sd) {
			sp.ops = append(sp.ops, mountOp{Kind: opHide, Path: sd, Dir: true, Mode: 0o755})
			regions = append(regions, region{sd, true})
		}
		for _, a := range aliases[sd] {
			if aliasSeen[a.Path] || shown[a.Path] || !visible(a.Path) {
				continue
			}
			aliasSeen[a.Path] = true
			if _, dir, _ := fsys.Lstat(a.Path); !dir {
				sp.ops = append(sp.ops, mountOp{Kind: opMask, Path: a.Path})
				continue
			}
			sp.ops = append(sp.ops, mountOp{Kind: opHide, Path: a.Path, Dir: true, Mode: 0o755})
			regions = append(regions, region{a.Path, true})
		}
	}

	// Grants: writable ones always need a bind; read-only ones only where
	// the host view does not already show them (a hidden tree) or where they
	// sit inside a writable root (a carve-out, planned per call).
	for _, g := range p.Grants {
		if g.Writable {
			sp.ops = append(sp.ops, mountOp{Kind: opBindRW, Path: g.Path, Src: g.Path, Dir: g.Dir})
			sp.writable = append(sp.writable, g.Path)
			continue
		}
		if outerHidden(regions, g.Path) {
			sp.ops = append(sp.ops, mountOp{Kind: opBindRO, Path: g.Path, Src: g.Path, Dir: g.Dir})
		}
	}

	// Credential masks, wherever the sandbox would show them: at their own
	// path and wherever another mount shows them. owner is the uid whose
	// credential it is, for one reached through a symbolic link.
	var mask func(path string, isAlias bool, owner int)
	mask = func(path string, isAlias bool, owner int) {
		real, ok := resolveHost(fsys, path)
		if !ok {
			return // nothing there now; one made later changes the record
		}
		if real != path {
			// A symbolic link on the way (a dotfiles ~/.aws, a ~/.config
			// elsewhere, a home in /home that is a link): the credential
			// is what it leads to, masked where that is, never at a path
			// through a link (where the helper refuses to mount). Only
			// what the home's owner owns: a link to /usr or /etc/passwd
			// in someone's home must not hide them from every command.
			// (Asked even inside a hidden home: the link may lead out.)
			if owner < 0 || fsys.Owner(real) != owner {
				return
			}
			// Nor where the sandbox mounts its own: /proc/PID of the
			// server's, a user's /proc/self, is no path in the sandbox's
			// proc, and a mask there failed every call of every server
			// that reads that home (any user's, in /home). No credential
			// lives in /proc, /sys or /dev.
			for _, d := range []string{"/proc", "/sys", "/dev"} {
				if policy.Within(real, d) {
					return
				}
			}
			if _, asked := aliases[real]; !once && !asked {
				if aliases == nil {
					aliases = map[string][]alias{}
				}
				aliases[real] = fsys.Aliases([]string{real})[real]
			}
			mask(real, isAlias, owner)
			return
		}
		if r := inRegion(path); once && r != nil && r.hidden {
			// Nothing is mounted twice: a path hidden here, with no link
			// on its way, shows nowhere else.
			return
		}
		exists, dir, _ := fsys.Lstat(path)
		if !exists {
			return
		}
		if !isAlias {
			for _, a := range aliases[path] {
				mask(a.Path, true, -1)
			}
		}
		if r := inRegion(path); r != nil && r.hidden || aliasSeen[path] {
			return // not visible anyway
		}
		for _, g := range p.Grants {
			if g.Path == path {
				return // granted by name: the user asked for it
			}
		}
		aliasSeen[path] = true
		if dir {
			sp.ops = append(sp.ops, mountOp{Kind: opHide, Path: path, Dir: true, Mode: credentialHideMode})
		} else {
			sp.ops = append(sp.ops, mountOp{Kind: opMask, Path: path})
		}
	}
	for _, h := range homeDirs(p, fsys) {
		owner := -1
		if real, ok := resolveHost(fsys, h); ok {
			owner = fsys.Owner(real)
		}
		for _, c := range policy.HomeCredentials(h, listIn(fsys, h)) {
			mask(c, false, owner)
		}
	}
	for _, s := range policy.SystemSecrets {
		mask(s, false, 0)
	}
	// A read-only grant inside a mask is shown again, by name.
	for _, g := range p.Grants {
		if g.Writable || outerHidden(regions, g.Path) {
			continue // bound above
		}
		for _, m := range sp.ops {
			if m.Kind == opHide && m.Path != g.Path && policy.Within(g.Path, m.Path) {
				sp.ops = append(sp.ops, mountOp{Kind: opBindRO, Path: g.Path, Src: g.Path, Dir: g.Dir})
				break
			}
		}
	}
	// A mount point inside a tree the sandbox owns (a tmpfs it made, the
	// private home) may be made, and what is in the way there moved
	// aside; anywhere else it must exist. Owned is the tree of the mount
	// right above it: a host tree shown again inside a tmpfs (the
	// workspace in /tmp) is the user's.
	for i := range sp.ops {
		sp.ops[i].Make = ownedAbove(p, sp.ops, sp.ops[i].Path)
	}
	sortOps(sp.ops)
	sp.seen = fsys.answers
	sp.check = &lazyCheck{}
	return sp
}

// listIn is fsys.ReadDir for the tool directories of home (the "*" of a
// tool's credentials: ~/.nvm/versions/node/*), which lists one only where
// every element of it below home is there, a directory or a link: the
// listing of a directory that is not there is a failed open (three system
// calls) asked again at every call's check, where the Lstat of its first
// missing element is one, and tells the same: made since, it answers
// otherwise. Most homes have few of these tools.
func listIn(fsys fsInfo, home string) func(string) []string {
	return func(dir string) []string {
		rel, err := filepath.Rel(home, dir)
		if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
			return fsys.ReadDir(dir)
		}
		p := home
		for _, elem := range strings.Split(rel, "/") {
			p = filepath.Join(p, elem)
			if exists, dir, symlink := fsys.Lstat(p); !exists || !dir && !symlink {
				return nil
			}
		}
		return fsys.ReadDir(dir)
	}
}

// ownedAbove reports whether the mount of ops right above path (the
// deepest one strictly above it, the last mounted of those at one path) is
// a tree the sandbox owns: a tmpfs it made, or the private home.
func ownedAbove(p *policy.Policy, ops []mountOp, path string) bool {
	var above *mountOp
	for i := range ops {
		o := &ops[i]
		if o.Kind == opMask || o.Path == path || !policy.Within(path, o.Path) {
			continue
		}
		if above == nil || len(o.Path) > len(above.Path) || o.Path == above.Path && o.Kind > above.Kind {
			above = o
		}
	}
	if above == nil {
		return false
	}
	return above.Kind == opTmpfs || above.Kind == opHide || above.Kind == opBindRW && p.PrivateHome != "" && above.Src == p.PrivateHome
}

// current returns sp, or a new plan if the host no longer answers what sp
// was planned from: a credential created or removed since (the user ran
// gh auth login while the server was up), a home added to /home. A call
// must hide the credentials that exist when it starts, not those that
// existed when the server did. The check is one lstat per credential path
// of each home (and per link on the way, with its target) and one listing
// of /home; a changed mount table is the caller's to see (mountWatch).
func (sp *staticPlan) current(p *policy.Policy, fsys fsInfo) *staticPlan {
	if !sp.changed(fsys) {
		return sp
	}
	n := planStatic(p, fsys)
	return &n
}

// fsQuery is one question planning asked the host: a path's Lstat, the
// listing of a directory, a link's target, or an owner.
type fsQuery struct {
	path string
	kind queryKind
}

type queryKind uint8

const (
	queryStat queryKind = iota
	queryList
	queryLink
	queryOwner
)

// fsAnswer is a query with what the host answered.
type fsAnswer struct {
	fsQuery
	stat  [3]bool  // Lstat's exists, dir, symlink
	names []string // ReadDir's names
	link  string   // Readlink's target ("" for an error)
	owner int      // Owner's uid
}

// fsRecord is every answer a plan was made from. Planning is a function of
// these answers and of the mount table (aliases): while the host gives
// the same ones, planning again would give the same plan.
type fsRecord []fsAnswer

// changed reports whether fsys now answers any query of r otherwise.
//
// Most answers are of a credential path the home does not have, many in
// one directory (the home itself, ~/.config): those are checked against
// one listing of the directory instead of an Lstat each, which costs a
// system call each (a listing is about four, for any number of them). A
// name the listing holds is there now; one it lacks is not. An empty
// listing tells nothing (it is also what a directory that cannot be read
// gives, whose names may still be reached): each is asked then.
func (r fsRecord) changed(fsys fsInfo) bool {
	how := r.checkPlan()
	return r.changedBy(&how, fsys)
}

// changed says whether the host answers sp.seen differently now.
func (sp *staticPlan) changed(fsys fsInfo) bool {
	if sp.check == nil { // a plan made by hand, in tests
		return sp.seen.changed(fsys)
	}
	sp.check.once.Do(func() { sp.check.how = sp.seen.checkPlan() })
	return sp.seen.changedBy(&sp.check.how, fsys)
}

// lazyCheck holds a plan's recordCheck, made once.
type lazyCheck struct {
	once sync.Once
	how  recordCheck
}

// recordCheck is how a record is checked, a function of the record alone:
// the directories listed instead of asking each of their missing names,
// and which answers each listing covers.
type recordCheck struct {
	lists []absentIn
	// in holds, for each answer of the record, the index in lists of the
	// listing that covers it, or -1.
	in []int32
}

// absentIn is a directory and the names the record says are missing
// there.
type absentIn struct {
	dir   string
	names []string
}

// checkPlan works out how r is checked (changed says why).
func (r fsRecord) checkPlan() recordCheck {
	byDir := map[string][]int{} // directory -> answers of names missing there
	var dirs []string
	for i, a := range r {
		if a.kind == queryStat && a.stat == [3]bool{} {
			d := filepath.Dir(a.path)
			if byDir[d] == nil {
				dirs = append(dirs, d)
			}
			byDir[d] = append(byDir[d], i)
		}
	}
	how := recordCheck{in: make([]int32, len(r))}
	for i := range how.in {
		how.in[i] = -1
	}
	for _, d := range dirs {
		answers := byDir[d]
		if len(answers) < minListed {
			continue
		}
		l := absentIn{dir: d}
		for _, i := range answers {
			l.names = append(l.names, filepath.Base(r[i].path))
			how.in[i] = int32(len(how.lists))
		}
		how.lists = append(how.lists, l)
	}
	return how
}

// changedBy is changed, checked as how says (how is r's checkPlan).
func (r fsRecord) changedBy(how *recordCheck, fsys fsInfo) bool {
	// listed[i] says that the listing how.lists[i] answered for its names;
	// an empty listing tells nothing, and its names are asked one by one.
	var listedBuf [64]bool
	listed := listedBuf[:0]
	if len(how.lists) > len(listedBuf) {
		listed = make([]bool, 0, len(how.lists))
	}
	for _, l := range how.lists {
		names := fsys.ReadDir(l.dir)
		for _, n := range l.names {
			if slices.Contains(names, n) {
				return true
			}
		}
		listed = append(listed, len(names) != 0)
	}
	for i, a := range r {
		switch a.kind {
		case queryList:
			if !slices.Equal(fsys.ReadDir(a.path), a.names) {
				return true
			}
		case queryLink:
			if target, _ := fsys.Readlink(a.path); target != a.link {
				return true
			}
		case queryOwner:
			if fsys.Owner(a.path) != a.owner {
				return true
			}
		default:
			if l := how.in[i]; l >= 0 && listed[l] {
				continue
			}
			exists, dir, symlink := fsys.Lstat(a.path)
			if [3]bool{exists, dir, symlink} != a.stat {
				return true
			}
		}
	}
	return false
}

// minListed is how many missing names of one directory make listing it
// cheaper than asking for each.
const minListed = 4

// recordFS is an fsInfo that records what it answered, once per query,
// and answers a query asked again from its record without asking the
// host. Planning walks every credential path from / (its home, its
// .config, ... are asked again for each), so this saves most of its
// system calls; and the plan is then a function of exactly the answers
// recorded, as current assumes, even where the host changed between two
// askings of one query.
type recordFS struct {
	fsInfo
	seen    map[fsQuery]int // index in answers
	answers fsRecord
}

// recorded returns the answer to q, if q was asked.
func (r *recordFS) recorded(q fsQuery) (fsAnswer, bool) {
	if r.seen == nil {
		r.seen = map[fsQuery]int{}
	}
	i, ok := r.seen[q]
	if !ok {
		return fsAnswer{}, false
	}
	return r.answers[i], true
}

func (r *recordFS) record(a fsAnswer) {
	r.seen[a.fsQuery] = len(r.answers)
	r.answers = append(r.answers, a)
}

func (r *recordFS) Lstat(path string) (exists, dir, symlink bool) {
	q := fsQuery{path: path, kind: queryStat}
	if a, ok := r.recorded(q); ok {
		return a.stat[0], a.stat[1], a.stat[2]
	}
	exists, dir, symlink = r.fsInfo.Lstat(path)
	r.record(fsAnswer{fsQuery: q, stat: [3]bool{exists, dir, symlink}})
	return exists, dir, symlink
}

func (r *recordFS) ReadDir(path string) []string {
	q := fsQuery{path: path, kind: queryList}
	if a, ok := r.recorded(q); ok {
		return slices.Clone(a.names) // the caller's to sort or cut
	}
	names := r.fsInfo.ReadDir(path)
	r.record(fsAnswer{fsQuery: q, names: slices.Clone(names)})
	return names
}

func (r *recordFS) Readlink(path string) (string, error) {
	q := fsQuery{path: path, kind: queryLink}
	if a, ok := r.recorded(q); ok {
		if a.link == "" {
			return "", errNoTarget
		}
		return a.link, nil
	}
	target, err := r.fsInfo.Readlink(path)
	if err != nil {
		target = "" // recorded as no target: an error
	}
	r.record(fsAnswer{fsQuery: q, link: target})
	if target == "" {
		return "", errNoTarget
	}
	return target, nil
}

// errNoTarget is recordFS's Readlink error: whatever the host's was, the
// record keeps only that there was no target.
var errNoTarget = errors.New("no link target")

func (r *recordFS) Owner(path string) int {
	q := fsQuery{path: path, kind: queryOwner}
	if a, ok := r.recorded(q); ok {
		return a.owner
	}
	uid := r.fsInfo.Owner(path)
	r.record(fsAnswer{fsQuery: q, owner: uid})
	return uid
}

// credentialHideMode is the mode of the empty directory hiding a
// credential directory, which tells its hide from the others.
const credentialHideMode = 0o700

// resolveHost resolves path as the kernel would, asking fsys: the path of
// what it names, with no symbolic link in it; false where nothing is
// there (a missing element, a dangling or looping link).
func resolveHost(fsys fsInfo, path string) (string, bool) {
	real, _, err := policy.ResolveWith(fsys, path, nil)
	return real, err == nil
}

// Aliases asks the recorded fsInfo, if it can tell (aliasFinder).
func (r *recordFS) Aliases(paths []string) map[string][]alias {
	if af, ok := r.fsInfo.(aliasFinder); ok {
		return af.Aliases(paths)
	}
	return nil
}

// AliasesOnce asks the recorded fsInfo, if it can tell (onceFinder).
func (r *recordFS) AliasesOnce(paths []string) (map[string][]alias, bool) {
	if of, ok := r.fsInfo.(onceFinder); ok {
		return of.AliasesOnce(paths)
	}
	return r.Aliases(paths), false
}

// onceFinder is an aliasFinder that can also say that no filesystem is
// mounted twice (AliasesOnce's second result): then nothing shows
// anywhere but at its own path, whatever appears later, for as long as the
// mounts stay as they are (which planning assumes in any case).
type onceFinder interface {
	AliasesOnce(paths []string) (map[string][]alias, bool)
}

// findAliases asks fsys, if it can tell, where else the trees and files
// the plan hides show: the private directories, the home, every
// credential and system secret, and the server's state. once says that
// nothing can show elsewhere: no filesystem is mounted twice (onceFinder).
func findAliases(p *policy.Policy, fsys fsInfo) (aliases map[string][]alias, once bool) {
	af, ok := fsys.(aliasFinder)
	if !ok {
		return nil, false
	}
	paths := append([]string(nil), policy.PrivateDirs...)
	if p.Home != "" {
		paths = append(paths, p.Home)
	}
	// Of the credentials, only those there at their own path: the masks
	// ask where else those show; one reached through a link is asked
	// where it leads, when it is masked; a missing one shows nowhere.
	// (The walks are the masks' own, recorded: they give the same answers.)
	there := func(c string) bool {
		real, ok := resolveHost(fsys, c)
		return ok && real == c
	}
	for _, h := range homeDirs(p, fsys) {
		for _, c := range policy.HomeCredentials(h, listIn(fsys, h)) {
			if there(c) {
				paths = append(paths, c)
			}
		}
	}
	for _, s := range policy.SystemSecrets {
		if there(s) {
			paths = append(paths, s)
		}
	}
	if p.StateDir != "" {
		paths = append(paths, p.StateDir)
	}
	if of, ok := fsys.(onceFinder); ok {
		return of.AliasesOnce(paths)
	}
	return af.Aliases(paths), false
}

// hiddenAt reports whether path lies in a hidden region.
func hiddenAt(regions []region, path string) bool {
	for _, r := range regions {
		if r.hidden && policy.Within(path, r.path) {
			return true
		}
	}
	return false
}

// region is a tree the plan puts somewhere: a private or hidden one, or a
// grant showing the host's again.
type region struct {
	path   string
	hidden bool
}

// regionAbove returns the deepest region strictly above path, or nil.
func regionAbove(regions []region, path string) *region {
	var best *region
	for i := range regions {
		r := &regions[i]
		if r.path != path && policy.Within(path, r.path) && (best == nil || len(r.path) >= len(best.path)) {
			best = r
		}
	}
	return best
}

// outerHidden reports whether the deepest region above path is hidden.
func outerHidden(regions []region, path string) bool {
	r := regionAbove(regions, path)
	return r != nil && r.hidden
}

func privateDirMode(d string) uint32 {
	if d == "/run" {
		return 0o755
	}
	return 0o1777
}

// homeDirs lists the home directories whose credentials are masked: the
// caller's, /root and every directory in /home.
func homeDirs(p *policy.Policy, fsys fsInfo) []string {
	seen := map[string]bool{}
	var out []string
	add := func(h string) {
		if h != "" && h != "/" && !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	add(p.Home)
	add("/root")
	for _, n := range fsys.ReadDir("/home") {
		add("/home/" + n)
	}
	return out
}

// planCall completes the static plan with this call's carve-outs:
// --read-only grants inside writable roots and the git protections, each
// with pins on every directory between it and its writable root, so that
// no directory above a carve-out can be renamed or removed (mv .git
// .git.old would take the carve-outs with it).
func planCall(p *policy.Policy, sp staticPlan, git []mountOp, fsys fsInfo) []mountOp {
	ops := append([]mountOp(nil), sp.ops...)
	var carve []mountOp
	for _, g := range p.Grants {
		if g.Writable {
			continue
		}
		if root := rootAbove(sp.writable, g.Path); root != "" && !readOnlyBetween(sp.ops, root, g.Path) {
			if exists, _, _ := fsys.Lstat(g.Path); exists {
				carve = append(carve, mountOp{Kind: opProtect, Path: g.Path, Dir: g.Dir})
			}
		}
	}
	carve = append(carve, git...)
	pinned := map[string]bool{}
	pin := func(c mountOp, root string) {
		for d := filepath.Dir(c.Path); d != root && policy.Within(d, root); d = filepath.Dir(d) {
			if readOnlyBetween(sp.ops, root, filepath.Join(d, "x")) {
				// A read-only tree of the sandbox's own holds d (the
				// workspace's parent in the private home): nothing in it
				// can be renamed, and a pin, a writable bind of it, would
				// make it writable again.
				break
			}
			if !pinned[d] {
				pinned[d] = true
				ops = append(ops, mountOp{Kind: opPin, Path: d, Dir: true, Make: makesBelow(p, sp.ops, d)})
			}
		}
	}
	for _, c := range carve {
		root := rootAbove(sp.writable, c.Path)
		if root == "" {
			continue
		}
		pin(c, root)
		ops = append(ops, c)
	}
	// A credential masked inside a writable root (a dotfiles workspace
	// that ~/.pypirc leads into, a --writable ~/.config holding gh's
	// token) is masked by its path: a directory above it renamed in one
	// call (mv pypi pypi2) would leave it at a path the next call's plan
	// does not mask. Pinned as the carve-outs are.
	for _, o := range sp.ops {
		if o.Kind != opMask && !(o.Kind == opHide && o.Mode == credentialHideMode) {
			continue
		}
		if root := rootAbove(sp.writable, o.Path); root != "" {
			pin(o, root)
		}
	}
	sortOps(ops)
	return ops
}

// makesBelow reports whether a pin at d is made where it is missing: in a
// tree the sandbox owns (the private home), above a mount point the
// helper makes (a grant of the home). On the first call of a fresh
// private home nothing is there yet, and a pin skipped as gone would let
// that call's command move the directory away and leave the wrong type
// where the grant's mount point goes. Pins above git's carve-outs, whose
// own mount points are never made, are not made either.
// readOnlyBetween reports whether a read-only tree of the static plan (a
// hidden tree, a grant shown read-only) lies below the writable root and
// holds path, path itself not: there path cannot be written, renamed or
// removed, whatever the root above allows.
func readOnlyBetween(static []mountOp, root, path string) bool {
	for _, o := range static {
		if (o.Kind == opHide || o.Kind == opBindRO) && o.Path != root && o.Path != path && policy.Within(o.Path, root) && policy.Within(path, o.Path) {
			return true
		}
	}
	return false
}

func makesBelow(p *policy.Policy, static []mountOp, d string) bool {
	if !ownedAbove(p, static, d) {
		return false
	}
	for _, o := range static {
		if o.Make && o.Path != d && policy.Within(o.Path, d) {
			return true
		}
	}
	return false
}

// rootAbove returns the deepest writable root strictly above path, or "".
func rootAbove(writable []string, path string) string {
	root := ""
	for _, w := range writable {
		if w != path && policy.Within(path, w) && len(w) > len(root) {
			root = w
		}
	}
	return root
}

// gitOps turns a call's git protections into mount steps.
func gitOps(prots []gitguard.Protection) []mountOp {
	ops := make([]mountOp, 0, len(prots))
	for _, pr := range prots {
		ops = append(ops, mountOp{Kind: opProtect, Path: pr.Path, Dir: pr.Dir, Link: pr.Link})
	}
	return ops
}
