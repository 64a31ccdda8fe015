package sandbox

import (
	_ "embed"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/nanosandbox/nanosandbox-mcp/internal/gitguard"
	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
)

// The Seatbelt profile of a macOS call (DESIGN.md §4), rendered here with
// no build tag so that Linux tests it against golden files
// (testdata/*.sbpl): nothing but a Mac can run sandbox-exec. run_darwin.go
// runs it.
//
// Every path goes into the profile as a parameter (sandbox-exec -D
// NAME=VALUE) and the text only names the parameter: a workspace called
// `a") (allow default` stays a path. The text depends on the policy's shape
// (how many paths of each kind, in what order), never on a path itself.
//
// Seatbelt matches the path the kernel resolved, so every path is
// canonicalized first (/tmp, /var and /etc are under /private on macOS):
// through a canonFunc, which tests replace.

//go:embed seatbelt_base.sbpl
var seatbeltBase string

// seatbeltMark splits the base: the policy's rules go between the head and
// the tail, which has the last word.
const seatbeltMark = ";; @policy\n"

// canonFunc returns path as the kernel names it when Seatbelt checks an
// access: every symlink resolved but a final one (and that too if follow),
// each name spelled as the volume holds it. A path that does not exist
// keeps the names past its deepest existing directory.
type canonFunc func(path string, follow bool) string

// sbKind is what a profile does with one path.
type sbKind uint8

const (
	// Reading rules.
	sbHide   sbKind = iota // a tree whose contents are hidden: no data, no xattrs, no programs run from it
	sbSecret               // a credential, file or tree: hidden wherever it is
	sbShow                 // a grant, shown again inside what is hidden
	// Writing rules.
	sbWrite   // a writable root
	sbProtect // a carve-out: read-only inside a writable root, itself and all below
	sbPin     // a directory between a carve-out and its root, or a root: never removed or renamed
)

// sbNames prefixes each kind's parameters: HIDE_0, HIDE_1...
var sbNames = [...]string{"HIDE", "SECRET", "SHOW", "WRITE", "PROTECT", "PIN"}

// sbRule is one path of a profile and what is done with it.
type sbRule struct {
	kind sbKind
	path string // canonical; the value of its parameter
}

// sbParam is one parameter of a profile: sandbox-exec -D Name=Value.
type sbParam struct {
	Name, Value string
}

// macOS locations the policy hides as Linux hides its private /tmp, /var/tmp
// and /run: shared temporary directories, which hold other programs' files
// (/private/var/folders holds every user's $TMPDIR and caches). Commands
// get a temporary directory of their own instead (seatbeltPlan.tmp).
var darwinPrivateDirs = []string{"/private/tmp", "/private/var/tmp", "/private/var/folders"}

// darwinCredentials are secrets of a macOS home beyond policy.Credentials,
// relative to it.
var darwinCredentials = []string{"Library/Keychains", "Library/Cookies"}

// darwinSystemSecrets are secret files of macOS beyond policy.SystemSecrets
// (which name Linux's, harmlessly absent here).
var darwinSystemSecrets = []string{"/private/etc/master.passwd"}

// dataVolume is where the writable half of a macOS system volume group is
// mounted: /Users/u is also /System/Volumes/Data/Users/u. Whatever is
// hidden is hidden under that name too, should the kernel name an access
// so.
const dataVolume = "/System/Volumes/Data"

// seatbeltStatic is what every call's profile shares, found once: the
// reading rules, the writable roots and the read-only grants inside them.
type seatbeltStatic struct {
	reads    []sbRule
	writable []string // writable roots: grants and the private home
	carve    []string // read-only grants inside a writable root
	self     string   // this binary, which runs first inside every sandbox (the reaper)
	homes    []string // the homes whose credentials are hidden
}

// planSeatbelt computes what every call's profile shares for p. self is
// this binary, fsys tells which credentials of other homes exist.
func planSeatbelt(p *policy.Policy, self string, fsys fsInfo, canon canonFunc) seatbeltStatic {
	st := seatbeltStatic{self: canon(self, true)}
	hide := func(kind sbKind, path string) {
		st.reads = append(st.reads, sbRule{kind, path})
		if !strings.HasPrefix(path, dataVolume+"/") {
			st.reads = append(st.reads, sbRule{kind, dataVolume + path})
		}
	}
	if p.Home != "" && !p.HomeGranted {
		hide(sbHide, canon(p.Home, true))
	}
	if p.AccountHome != "" {
		hide(sbHide, canon(p.AccountHome, true))
	}
	for _, d := range darwinPrivateDirs {
		hide(sbHide, canon(d, true))
	}
	// The server's state: every workspace's private home (this call's is
	// shown again below), the git guard's journal. Where the home is
	// hidden it is already; under --read-only ~ it would not be.
	if p.StateDir != "" {
		granted := false
		for _, g := range p.Grants {
			granted = granted || canon(g.Path, true) == canon(p.StateDir, true)
		}
		if !granted {
			hide(sbHide, canon(p.StateDir, true))
		}
	}

	shown := map[string]bool{}
	for _, g := range p.Grants {
		c := canon(g.Path, true)
		shown[c] = true
		st.reads = append(st.reads, sbRule{sbShow, c})
		if g.Writable {
			st.writable = append(st.writable, c)
		}
	}
	if p.PrivateHome != "" {
		c := canon(p.PrivateHome, true)
		st.reads = append(st.reads, sbRule{sbShow, c})
		st.writable = append(st.writable, c)
	}
	for _, g := range p.Grants {
		c := canon(g.Path, true)
		if !g.Writable && rootAbove(st.writable, c) != "" {
			st.carve = append(st.carve, c)
		}
	}

	// Credentials wherever a home is: the caller's whether or not they
	// exist yet (the user may log in to a cloud while the server runs),
	// other homes' where they exist. A symlinked one is hidden where it
	// leads too, unless what is there is another's than the home's owner
	// (owner): a link to /usr in someone's home must not hide /usr from
	// every command.
	// One a grant names is shown, as the user asked. The versions of a
	// tool manager are those installed at the start (planned once): one
	// installed later has its npmrc masked from the next start.
	secret := func(path string, mustExist bool, owner int) {
		exists, _, symlink := fsys.Lstat(path)
		if mustExist && !exists {
			return
		}
		paths := []string{canon(path, false)}
		if symlink {
			// Where either owner is unknown (a target not there yet), a
			// rule for it hides nothing else.
			target := canon(path, true)
			if o := fsys.Owner(target); owner < 0 || o < 0 || o == owner {
				paths = append(paths, target)
			}
		}
		for _, c := range paths {
			if !shown[c] {
				hide(sbSecret, c)
			}
		}
	}
	st.homes = darwinHomes(p, fsys)
	for _, h := range st.homes {
		owner := fsys.Owner(canon(h, true))
		for _, c := range policy.HomeCredentials(h, fsys.ReadDir) {
			secret(c, h != p.Home, owner)
		}
		for _, c := range darwinCredentials {
			secret(filepath.Join(h, c), h != p.Home, owner)
		}
	}
	for _, s := range append(append([]string(nil), policy.SystemSecrets...), darwinSystemSecrets...) {
		secret(s, true, 0)
	}
	return st
}

// darwinHomes lists the homes whose credentials are hidden: the caller's,
// root's and every one in /Users.
func darwinHomes(p *policy.Policy, fsys fsInfo) []string {
	seen := map[string]bool{}
	var out []string
	add := func(h string) {
		if h != "" && h != "/" && !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	add(p.Home)
	add("/private/var/root")
	for _, n := range fsys.ReadDir("/Users") {
		add("/Users/" + n)
	}
	return out
}

// seatbeltPlan is one call's profile, before it is rendered: its rules in
// the order they apply (a deeper path after a shallower one, so that it
// overrides it, as a deeper mount covers a shallower one on Linux).
type seatbeltPlan struct {
	reads  []sbRule
	writes []sbRule
	self   string
	// stdio is what the command was given as its stdio in the one-shot
	// form: the terminal it runs in (it alone of the user's terminals is
	// open to the command), or files the shell redirected from or to,
	// which may lie where the command may not read or write otherwise.
	stdio []sbStdio
	// proxyPort is the loopback port of the server's proxy, or 0 for no
	// network at all. TODO(#12): set once the proxy serves macOS.
	proxyPort int
}

// sbStdio is a file given to the command as its stdio.
type sbStdio struct {
	path string // as the kernel names it (F_GETPATH of the descriptor)
	kind stdioKind
}

type stdioKind uint8

const (
	stdioTerminal stdioKind = iota // read, written and controlled (ioctl)
	stdioInput                     // read
	stdioOutput                    // written
)

// call completes the shared rules with one call's: its private temporary
// directory tmp, git's protections, and the stdio it was given, each
// carve-out with pins on the directories above it up to its writable
// root.
func (st *seatbeltStatic) call(tmp string, prots []gitguard.Protection, stdio []sbStdio, canon canonFunc) *seatbeltPlan {
	pl := &seatbeltPlan{self: st.self, stdio: stdio}
	tmp = canon(tmp, true)
	pl.reads = append(append(pl.reads, st.reads...), sbRule{sbShow, tmp})
	roots := append(append([]string(nil), st.writable...), tmp)
	for _, r := range roots {
		pl.writes = append(pl.writes, sbRule{sbWrite, r}, sbRule{sbPin, r})
	}
	carve := append([]string(nil), st.carve...)
	for _, p := range prots {
		carve = append(carve, canon(p.Path, false))
	}
	for _, c := range carve {
		root := rootAbove(roots, c)
		if root == "" {
			continue // not writable anyway
		}
		pl.writes = append(pl.writes, sbRule{sbProtect, c})
		for d := filepath.Dir(c); d != root && policy.Within(d, root); d = filepath.Dir(d) {
			pl.writes = append(pl.writes, sbRule{sbPin, d})
		}
	}
	pl.reads = orderRules(pl.reads)
	pl.writes = orderRules(pl.writes)
	return pl
}

// orderRules sorts rules so that a deeper path comes after a shallower one
// (Seatbelt lets the last matching rule decide), and at equal depth by
// kind, keeping their order otherwise: the profile's text depends on the
// depth of paths, never on their names. It drops repeats.
func orderRules(rules []sbRule) []sbRule {
	seen := map[sbRule]bool{}
	out := rules[:0]
	for _, r := range rules {
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		di, dj := depth(out[i].path), depth(out[j].path)
		if di != dj {
			return di < dj
		}
		return out[i].kind < out[j].kind
	})
	return out
}

// What each kind of rule allows or denies. Hidden paths keep their metadata
// (stat, and so the lookups through them that reach a grant) but not their
// contents, their extended attributes or their programs.
const (
	sbHideOps  = "file-read-data file-read-xattr process-exec*"
	sbWriteOps = "file-write*"
	sbPinOps   = "file-write-unlink" // unlink and rename alike
)

// render returns the profile text and its parameters, in the order
// sandbox-exec takes them.
func (pl *seatbeltPlan) render() (profile string, params []sbParam) {
	head, tail, ok := strings.Cut(seatbeltBase, seatbeltMark)
	if !ok {
		panic(bug(fmt.Errorf("seatbelt_base.sbpl lacks its mark %q", seatbeltMark)))
	}
	var b strings.Builder
	b.WriteString(head)
	count := map[sbKind]int{}
	param := func(r sbRule) string {
		name := fmt.Sprintf("%s_%d", sbNames[r.kind], count[r.kind])
		count[r.kind]++
		params = append(params, sbParam{name, r.path})
		return name
	}
	b.WriteString(";; Reading: what is hidden and what is shown again, deeper paths last.\n")
	for _, r := range pl.reads {
		switch name := param(r); r.kind {
		case sbHide, sbSecret:
			fmt.Fprintf(&b, "(deny %s (subpath (param %q)))\n", sbHideOps, name)
		case sbShow:
			fmt.Fprintf(&b, "(allow %s (subpath (param %q)))\n", sbHideOps, name)
		default:
			panic(bug(fmt.Errorf("reading rule of kind %d", r.kind)))
		}
	}
	b.WriteString(";; Writing: the writable roots but their carve-outs, deeper paths last.\n")
	for _, r := range pl.writes {
		switch name := param(r); r.kind {
		case sbWrite:
			fmt.Fprintf(&b, "(allow %s (subpath (param %q)))\n", sbWriteOps, name)
		case sbProtect:
			fmt.Fprintf(&b, "(deny %s (literal (param %[2]q)) (subpath (param %[2]q)))\n", sbWriteOps, name)
		case sbPin:
			fmt.Fprintf(&b, "(deny %s (literal (param %q)))\n", sbPinOps, name)
		default:
			panic(bug(fmt.Errorf("writing rule of kind %d", r.kind)))
		}
	}
	b.WriteString("\n")
	b.WriteString(tail)

	b.WriteString("\n;; This binary, which runs first in the sandbox to start and end the command.\n")
	params = append(params, sbParam{"SELF", pl.self})
	b.WriteString("(allow file-read* process-exec* (literal (param \"SELF\")))\n")
	for i, f := range pl.stdio {
		if i == 0 {
			b.WriteString(";; What the command was given as its stdio.\n")
		}
		name := fmt.Sprintf("STDIO_%d", i)
		params = append(params, sbParam{name, f.path})
		ops := [...]string{"file-read-data file-write-data file-ioctl", "file-read-data", "file-write-data"}[f.kind]
		fmt.Fprintf(&b, "(allow %s (literal (param %q)))\n", ops, name)
	}
	if pl.proxyPort > 0 {
		b.WriteString(";; The server's proxy, the only way out.\n")
		fmt.Fprintf(&b, "(allow network-outbound (remote ip \"localhost:%d\"))\n", pl.proxyPort)
	}
	return b.String(), params
}

// seatbeltArgs is sandbox-exec's command line for profile and params,
// running argv.
func seatbeltArgs(profile string, params []sbParam, argv ...string) []string {
	args := []string{"sandbox-exec", "-p", profile}
	for _, p := range params {
		args = append(args, "-D", p.Name+"="+p.Value)
	}
	return append(append(args, "--"), argv...)
}
