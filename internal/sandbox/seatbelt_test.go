package sandbox

import (
	"embed"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nanosandbox/nanosandbox-mcp/internal/gitguard"
	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
)

var update = flag.Bool("update", false, "rewrite golden files")

// goldenFiles are the golden profiles, built into the test binary: .ci/run
// runs it from elsewhere, as another user.
//
//go:embed testdata/*.sbpl
var goldenFiles embed.FS

// fakeCanon resolves paths as macOS does, for the tests: /tmp, /var and
// /etc lead under /private, and links adds other symlinks (path -> target).
func fakeCanon(links map[string]string) canonFunc {
	all := map[string]string{"/tmp": "/private/tmp", "/var": "/private/var", "/etc": "/private/etc"}
	maps.Copy(all, links)
	var canon canonFunc
	canon = func(path string, follow bool) string {
		parts := strings.Split(strings.TrimPrefix(filepath.Clean(path), "/"), "/")
		cur := "/"
		for i, name := range parts {
			next := filepath.Join(cur, name)
			if target, ok := all[next]; ok && (follow || i < len(parts)-1) {
				return canon(filepath.Join(append([]string{target}, parts[i+1:]...)...), follow)
			}
			cur = next
		}
		return cur
	}
	return canon
}

// The caller of the representative policies: a home in /Users holding the
// workspace, the server's private home in its caches.
const (
	tHome        = "/Users/me"
	tWorkspace   = tHome + "/proj"
	tPrivateHome = tHome + "/Library/Caches/nanosandbox-mcp/homes/proj-0123456789ab"
	tSelf        = "/opt/homebrew/bin/nanosandbox-mcp"
	tTmp         = "/private/var/folders/xy/abc/T/nanosandbox-call-1"
)

func tFS() *fakeFS {
	return newFakeFS(tWorkspace+"/", tHome+"/.ssh/id_ed25519", "/Users/other/.aws/credentials",
		"/Users/other/notes", "/Users/Shared/", "/private/var/root/.ssh/", "/private/etc/master.passwd")
}

// seatbeltCase is a policy and a call to render a profile for.
type seatbeltCase struct {
	name  string
	pol   *policy.Policy
	fs    *fakeFS
	links map[string]string
	prots []gitguard.Protection
	stdio []sbStdio
	proxy int
}

func seatbeltCases() []seatbeltCase {
	ws := policy.Grant{Path: tWorkspace, Writable: true, Dir: true, Flag: "--workspace"}
	return []seatbeltCase{
		{
			name: "default",
			pol:  &policy.Policy{Workspace: tWorkspace, Home: tHome, PrivateHome: tPrivateHome, Grants: []policy.Grant{ws}},
			fs:   tFS(),
		},
		{
			// A --writable directory outside the home, a --writable file, a
			// --read-only tree in the workspace (a carve-out two levels
			// down, pinned up to the workspace) with a --writable inside it
			// again, and a --read-only file in the home, shown again.
			name: "grants",
			pol: &policy.Policy{Workspace: tWorkspace, Home: tHome, PrivateHome: tPrivateHome, Grants: []policy.Grant{
				ws,
				{Path: "/opt/cache", Writable: true, Dir: true, Flag: "--writable"},
				{Path: "/tmp/notes.txt", Writable: true, Flag: "--writable"},
				{Path: tWorkspace + "/vendor/lib", Dir: true, Flag: "--read-only"},
				{Path: tWorkspace + "/vendor/lib/cache", Writable: true, Dir: true, Flag: "--writable"},
				{Path: tHome + "/.gitconfig", Flag: "--read-only"},
			}},
			fs: tFS(),
		},
		{
			// What gitguard keeps read-only for a call: a repository's
			// config and hooks (a stand-in it made), a submodule's
			// gitdir, a symlinked .git of a nested repository.
			name: "git",
			pol:  &policy.Policy{Workspace: tWorkspace, Home: tHome, PrivateHome: tPrivateHome, Grants: []policy.Grant{ws}},
			fs:   tFS(),
			prots: []gitguard.Protection{
				{Path: tWorkspace + "/.git/config"},
				{Path: tWorkspace + "/.git/hooks", Dir: true},
				{Path: tWorkspace + "/.git/modules/sub/config"},
				{Path: tWorkspace + "/.git/modules/sub/hooks", Dir: true},
				{Path: tWorkspace + "/nested/.git", Link: true},
				{Path: tPrivateHome + "/go/pkg/mod/x/.git/config"},
			},
		},
		{
			// --read-only ~: the home is shown, its credentials are not,
			// but for one the user named; no private home. The home's
			// .ssh is a symlink elsewhere: hidden there too.
			name: "home-granted",
			pol: &policy.Policy{Workspace: tWorkspace, Home: tHome, HomeGranted: true, StateDir: tHome + "/Library/Caches/nanosandbox-mcp", Grants: []policy.Grant{
				ws,
				{Path: tHome, Dir: true, Flag: "--read-only"},
				{Path: tHome + "/.ssh/known_hosts", Flag: "--read-only"},
			}},
			fs:    newFakeFS(tWorkspace+"/", tHome+"/.ssh@", "/Volumes/keys/ssh/known_hosts"),
			links: map[string]string{tHome + "/.ssh": "/Volumes/keys/ssh"},
		},
		{
			// The one-shot form on a terminal, its output redirected to a
			// file in the home; and (later, #12) the proxy.
			name: "stdio-proxy",
			pol:  &policy.Policy{Workspace: "/tmp/ws", Home: tHome, Grants: []policy.Grant{{Path: "/tmp/ws", Writable: true, Dir: true, Flag: "--workspace"}}},
			fs:   newFakeFS("/tmp/ws/"),
			stdio: []sbStdio{{"/dev/ttys003", stdioTerminal}, {tHome + "/in.txt", stdioInput},
				{tHome + "/build.log", stdioOutput}},
			proxy: 41234,
		},
	}
}

func (c seatbeltCase) render() (*seatbeltPlan, string, []sbParam) {
	canon := fakeCanon(c.links)
	st := planSeatbelt(c.pol, tSelf, c.fs, canon)
	pl := st.call(tTmp, c.prots, c.stdio, canon)
	pl.proxyPort = c.proxy
	text, params := pl.render()
	return pl, text, params
}

// golden is a profile and its parameters as a golden file holds them: the
// profile, then each parameter on a comment line.
func golden(profile string, params []sbParam) string {
	var b strings.Builder
	b.WriteString(profile)
	b.WriteString("\n;; ---- parameters: sandbox-exec -D NAME=VALUE ----\n")
	for _, p := range params {
		fmt.Fprintf(&b, ";; -D %s=%s\n", p.Name, p.Value)
	}
	return b.String()
}

func TestSeatbeltGolden(t *testing.T) {
	for _, c := range seatbeltCases() {
		t.Run(c.name, func(t *testing.T) {
			_, text, params := c.render()
			checkProfile(t, text, params)
			got := golden(text, params)
			path := filepath.Join("testdata", c.name+".sbpl")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := goldenFiles.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("%s (-want +got), rewrite with -update if deliberate:\n%s", path, diff)
			}
		})
	}
}

// TestSeatbeltDecisions evaluates each representative profile as Seatbelt
// would (the last matching rule decides) for the accesses DESIGN.md §7
// names.
func TestSeatbeltDecisions(t *testing.T) {
	type access struct {
		op, path string
		allow    bool
	}
	for _, tt := range []struct {
		name string
		want []access
	}{
		{"default", []access{
			{"file-write-data", tWorkspace + "/a/b.go", true},
			{"file-write-create", tWorkspace, true},
			{"file-write-unlink", tWorkspace, false}, // the root itself
			{"file-write-unlink", tWorkspace + "/a", true},
			{"file-write-data", tPrivateHome + "/.bashrc", true},
			{"file-write-data", tTmp + "/x", true},
			{"file-write-create", "/private/tmp/x", false},
			{"file-write-create", "/private/var/tmp/x", false},
			{"file-write-create", "/private/var/folders/xy/abc/T/x", false},
			{"file-write-data", tHome + "/.bashrc", false},
			{"file-write-create", "/private/etc/x", false},
			{"file-write-setugid", tWorkspace + "/a", false},
			{"file-read-data", tWorkspace + "/a", true},
			{"file-read-data", tHome + "/notes.txt", false},
			{"file-read-metadata", tHome + "/notes.txt", true},
			{"file-read-data", dataVolume + tHome + "/notes.txt", false},
			{"process-exec", tHome + "/bin/tool", false},
			{"process-exec", tWorkspace + "/bin/tool", true},
			{"file-read-data", tHome + "/.ssh/id_ed25519", false},
			{"file-read-data", "/Users/other/.aws/credentials", false},
			{"file-read-data", "/Users/other/notes", true}, // their permissions guard the rest
			{"file-read-data", "/private/etc/passwd", true},
			{"file-read-data", "/private/etc/master.passwd", false},
			{"file-read-data", "/private/tmp/x", false},
			{"file-read-data", tTmp + "/x", true},
			{"file-read-data", tSelf, true},
			{"process-exec", tSelf, true},
			{"file-read-data", "/dev/ttys001", false},
			{"file-write-data", "/dev/null", true},
			{"file-write-data", "/dev/random", false},
			{"network-outbound", "", false},
		}},
		{"grants", []access{
			{"file-write-data", "/opt/cache/x", true},
			{"file-write-data", "/private/tmp/notes.txt", true},
			{"file-write-unlink", "/private/tmp/notes.txt", false},
			{"file-write-data", tWorkspace + "/vendor/lib/x.go", false},
			{"file-write-create", tWorkspace + "/vendor/lib/new.go", false},
			{"file-write-unlink", tWorkspace + "/vendor/lib", false},
			{"file-write-unlink", tWorkspace + "/vendor", false},
			{"file-write-create", tWorkspace + "/vendor/sibling", true},
			{"file-write-data", tWorkspace + "/vendor/lib/cache/x", true},
			{"file-read-data", tHome + "/.gitconfig", true},
			{"file-read-data", tHome + "/.profile", false},
		}},
		{"git", []access{
			{"file-write-data", tWorkspace + "/.git/config", false},
			{"file-write-unlink", tWorkspace + "/.git/config", false},
			{"file-write-create", tWorkspace + "/.git/hooks/pre-commit", false},
			{"file-write-mode", tWorkspace + "/.git/hooks", false},
			{"file-write-unlink", tWorkspace + "/.git", false},
			{"file-write-data", tWorkspace + "/.git/index", true},
			{"file-write-create", tWorkspace + "/.git/objects/ab/cdef", true},
			{"file-write-unlink", tWorkspace + "/.git/modules", false},
			{"file-write-unlink", tWorkspace + "/.git/modules/sub", false},
			{"file-write-data", tWorkspace + "/.git/modules/sub/HEAD", true},
			{"file-write-unlink", tWorkspace + "/nested/.git", false},
			{"file-write-unlink", tWorkspace + "/nested", false},
			{"file-write-data", tPrivateHome + "/go/pkg/mod/x/.git/config", false},
			{"file-write-data", tPrivateHome + "/go/pkg/mod/x/y.go", true},
		}},
		{"home-granted", []access{
			{"file-read-data", tHome + "/notes.txt", true},
			{"file-read-data", tHome + "/.ssh/id_ed25519", false},
			{"file-read-data", "/Volumes/keys/ssh/id_ed25519", false},
			{"file-read-data", "/Volumes/keys/ssh/known_hosts", true}, // as the kernel names it
			{"file-read-data", tHome + "/.aws/credentials", false},
			{"file-read-data", tHome + "/Library/Keychains/login.keychain-db", false},
			{"file-write-data", tHome + "/notes.txt", false},
			// The server's state, other workspaces' private homes with it.
			{"file-read-data", tHome + "/Library/Caches/nanosandbox-mcp/homes/other-0123/.git-credentials", false},
			{"file-read-data", tHome + "/Library/Caches/nanosandbox-mcp/git-calls", false},
			{"file-read-data", tHome + "/Library/Caches/other-app/x", true},
		}},
		{"stdio-proxy", []access{
			{"file-write-data", "/private/tmp/ws/x", true},
			{"file-read-data", "/dev/ttys003", true},
			{"file-ioctl", "/dev/ttys003", true},
			{"file-read-data", "/dev/ttys004", false},
			{"file-read-data", tHome + "/in.txt", true},
			{"file-write-data", tHome + "/in.txt", false},
			{"file-write-data", tHome + "/build.log", true},
			{"file-read-data", tHome + "/build.log", false},
			{"file-write-unlink", tHome + "/build.log", false},
			{"file-read-data", tHome + "/other", false},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var c seatbeltCase
			for _, cc := range seatbeltCases() {
				if cc.name == tt.name {
					c = cc
				}
			}
			_, text, params := c.render()
			prof := parseProfile(t, text, params)
			for _, a := range tt.want {
				if got := prof.allows(a.op, a.path); got != a.allow {
					t.Errorf("%s %q: allowed %v, want %v", a.op, a.path, got, a.allow)
				}
			}
		})
	}
}

// TestSeatbeltHostileNames: paths that read as profile text (quotes,
// parentheses, newlines, comments, raw strings) stay parameters. The
// profile of a policy with them is the profile of the same policy with
// plain names, and holds none of them.
func TestSeatbeltHostileNames(t *testing.T) {
	hostile := []string{
		`/Users/me/a") (allow default) ("`,
		"/Users/me/b\n(allow file-write* (subpath \"/\"))\n;",
		`/Users/me/c\" #"^/" (param "SELF") ; x`,
		"/Users/me/d\x7f\t|#;)",
	}
	// The same paths with every name but the slashes made plain: paths as
	// deep as the hostile ones.
	var plain []string
	for _, h := range hostile {
		plain = append(plain, "/Users/me/"+regexp.MustCompile(`[^/]`).ReplaceAllString(strings.TrimPrefix(h, "/Users/me/"), "x"))
	}
	build := func(names []string) (string, []sbParam) {
		ws := names[0] + "/ws"
		p := &policy.Policy{Workspace: ws, Home: "/Users/me", PrivateHome: names[1] + "/home", Grants: []policy.Grant{
			{Path: ws, Writable: true, Dir: true},
			{Path: names[2], Writable: true, Dir: true},
			{Path: ws + "/" + filepath.Base(names[3]), Dir: true},
		}}
		canon := fakeCanon(nil)
		st := planSeatbelt(p, names[3]+"/bin/nanosandbox-mcp", newFakeFS(ws+"/"), canon)
		return st.call(names[0]+"/tmp", []gitguard.Protection{{Path: ws + "/.git/config"}}, []sbStdio{{names[1] + "/out", stdioOutput}}, canon).render()
	}
	text, params := build(hostile)
	checkProfile(t, text, params)
	plainText, _ := build(plain)
	if diff := cmp.Diff(plainText, text); diff != "" {
		t.Errorf("the names changed the profile's text (-plain +hostile):\n%s", diff)
	}
	for _, h := range hostile {
		for _, part := range []string{h, "(allow default)", `(subpath "/")`, `#"^/"`} {
			if strings.Contains(text, part) {
				t.Errorf("the profile text holds %q", part)
			}
		}
	}
	found := 0
	for _, p := range params {
		for _, h := range hostile {
			if strings.HasPrefix(p.Value, h) {
				found++
			}
		}
	}
	if found < len(hostile) {
		t.Errorf("only %d parameters carry the hostile paths: %q", found, params)
	}
	// The hostile workspace is still the one writable.
	prof := parseProfile(t, text, params)
	if !prof.allows("file-write-data", hostile[0]+"/ws/x") || prof.allows("file-write-data", "/Users/me/x") {
		t.Errorf("the hostile profile decides writes wrongly")
	}
}

// TestSeatbeltCanonical: every path reaches the profile as the kernel
// names it, through the resolver: /tmp, /var and /etc under /private, a
// symlinked home and credential where they lead, a protected symlink as
// itself.
func TestSeatbeltCanonical(t *testing.T) {
	links := map[string]string{"/Users/me": "/Volumes/Home/me", "/Volumes/Home/me/.aws": "/Volumes/keys/aws"}
	p := &policy.Policy{
		Workspace: "/tmp/ws", Home: "/Users/me", PrivateHome: "/var/cache/nsb/home",
		Grants: []policy.Grant{
			{Path: "/tmp/ws", Writable: true, Dir: true},
			{Path: "/etc/ssl", Dir: true},
			{Path: "/Users/me/docs", Dir: true},
		},
	}
	canon := fakeCanon(links)
	st := planSeatbelt(p, "/tmp/bin/nanosandbox-mcp", newFakeFS("/Users/me/.aws@"), canon)
	pl := st.call("/var/folders/x/T/call-1", []gitguard.Protection{{Path: "/tmp/ws/.git", Link: true}, {Path: "/tmp/ws/.git/config"}}, nil, canon)
	_, params := pl.render()
	values := map[string]bool{}
	for _, prm := range params {
		values[prm.Value] = true
		for _, raw := range []string{"/tmp/", "/var/", "/etc/", "/Users/me/"} {
			if strings.HasPrefix(prm.Value, raw) {
				t.Errorf("%s=%s: not canonical", prm.Name, prm.Value)
			}
		}
	}
	for _, want := range []string{
		"/private/tmp/ws", "/private/etc/ssl", "/Volumes/Home/me", "/Volumes/Home/me/docs",
		"/private/var/cache/nsb/home", "/private/var/folders/x/T/call-1", "/private/tmp/bin/nanosandbox-mcp",
		"/Volumes/Home/me/.aws", "/Volumes/keys/aws", "/Volumes/Home/me/.ssh",
		"/private/tmp/ws/.git", "/private/tmp/ws/.git/config",
	} {
		if !values[want] {
			t.Errorf("no parameter holds %s", want)
		}
	}
}

// checkProfile checks that text parses, that every parameter it names is
// given and every one given is named, and that no rule of the policy's
// part applies to everything (a rule without a filter would).
func checkProfile(t *testing.T, text string, params []sbParam) {
	t.Helper()
	prof := parseProfile(t, text, params)
	given := map[string]bool{}
	for _, p := range params {
		if given[p.Name] {
			t.Errorf("parameter %s given twice", p.Name)
		}
		given[p.Name] = true
		if p.Value == "" || !filepath.IsAbs(p.Value) {
			t.Errorf("parameter %s=%q: not an absolute path", p.Name, p.Value)
		}
	}
	for name := range prof.named {
		if !given[name] {
			t.Errorf("the profile names parameter %s, which is not given", name)
		}
	}
	for name := range given {
		if !prof.named[name] {
			t.Errorf("parameter %s is given but never named", name)
		}
	}
	// What the base itself allows everywhere; nothing else may be.
	everywhere := map[string]bool{"process-fork": true, "process-exec*": true, "sysctl-read": true, "mach-host*": true,
		"ipc-posix-sem": true, "pseudo-tty": true, "file-read*": true, "file-map-executable": true}
	for _, r := range prof.rules {
		if r.allow && r.filter == nil {
			for _, op := range r.ops {
				if !everywhere[op] {
					t.Errorf("(allow %s) applies everywhere", op)
				}
			}
		}
	}
}

// sexp is a parsed SBPL form: an atom (a symbol, a string or a raw
// #"regex") or a list.
type sexp struct {
	atom   string
	str    bool // atom was a string
	regex  bool // atom was #"..."
	list   []sexp
	isList bool
}

// readSexps parses SBPL text: comments, lists, symbols, strings with
// backslash escapes, and #"raw" regex strings.
func readSexps(text string) ([]sexp, error) {
	var stack [][]sexp
	cur := []sexp{}
	for i := 0; i < len(text); {
		c := text[i]
		switch {
		case c == ';':
			for i < len(text) && text[i] != '\n' {
				i++
			}
		case c == ' ' || c == '\n' || c == '\t':
			i++
		case c == '(':
			stack = append(stack, cur)
			cur = []sexp{}
			i++
		case c == ')':
			if len(stack) == 0 {
				return nil, fmt.Errorf("unbalanced ) at %d", i)
			}
			l := sexp{list: cur, isList: true}
			cur = append(stack[len(stack)-1], l)
			stack = stack[:len(stack)-1]
			i++
		case c == '"' || strings.HasPrefix(text[i:], `#"`):
			raw := c == '#'
			if raw {
				i++
			}
			i++
			var b strings.Builder
			for {
				if i >= len(text) {
					return nil, fmt.Errorf("unterminated string")
				}
				if text[i] == '\\' && !raw {
					b.WriteByte(text[i+1])
					i += 2
					continue
				}
				if text[i] == '"' {
					i++
					break
				}
				b.WriteByte(text[i])
				i++
			}
			cur = append(cur, sexp{atom: b.String(), str: !raw, regex: raw})
		default:
			j := i
			for j < len(text) && !strings.ContainsRune(" \n\t()\";", rune(text[j])) {
				j++
			}
			cur = append(cur, sexp{atom: text[i:j]})
			i = j
		}
	}
	if len(stack) != 0 {
		return nil, fmt.Errorf("%d unclosed (", len(stack))
	}
	return cur, nil
}

// sbProfile is a parsed profile, evaluated as Seatbelt does for the
// filters the generator writes: the last rule whose operation and filter
// match decides.
type sbProfile struct {
	rules  []sbEvalRule
	named  map[string]bool // parameters named
	params map[string]string
}

type sbEvalRule struct {
	allow  bool
	ops    []string
	filter []sexp // nil: everything
}

func parseProfile(t *testing.T, text string, params []sbParam) *sbProfile {
	t.Helper()
	forms, err := readSexps(text)
	if err != nil {
		t.Fatalf("the profile does not parse: %v\n%s", err, text)
	}
	p := &sbProfile{named: map[string]bool{}, params: map[string]string{}}
	for _, prm := range params {
		p.params[prm.Name] = prm.Value
	}
	var walk func(s sexp)
	walk = func(s sexp) {
		if !s.isList {
			return
		}
		if len(s.list) == 2 && s.list[0].atom == "param" && s.list[1].str {
			p.named[s.list[1].atom] = true
		}
		for _, x := range s.list {
			walk(x)
		}
	}
	for _, f := range forms {
		walk(f)
		if !f.isList || len(f.list) == 0 {
			t.Fatalf("a top-level form that is no list: %+v", f)
		}
		head := f.list[0].atom
		switch head {
		case "version":
			continue
		case "allow", "deny":
		default:
			t.Fatalf("unknown top-level form %q", head)
		}
		r := sbEvalRule{allow: head == "allow"}
		for _, x := range f.list[1:] {
			switch {
			case !x.isList:
				r.ops = append(r.ops, x.atom)
			case len(x.list) > 0 && x.list[0].atom == "with":
				// a modifier, such as (with no-log)
			default:
				r.filter = append(r.filter, x)
			}
		}
		if len(r.ops) == 0 {
			t.Fatalf("a rule without operations: %+v", f)
		}
		p.rules = append(p.rules, r)
	}
	return p
}

// allows reports whether op on path is allowed.
func (p *sbProfile) allows(op, path string) bool {
	allowed := false
	for _, r := range p.rules {
		matchOp := false
		for _, o := range r.ops {
			if o == "default" || o == op || strings.HasSuffix(o, "*") && strings.HasPrefix(op, strings.TrimSuffix(o, "*")) {
				matchOp = true
			}
		}
		if !matchOp {
			continue
		}
		if r.filter == nil || p.anyMatch(r.filter, path) {
			allowed = r.allow
		}
	}
	return allowed
}

func (p *sbProfile) anyMatch(filters []sexp, path string) bool {
	for _, f := range filters {
		if p.match(f, path) {
			return true
		}
	}
	return false
}

// match evaluates the filters the profile uses on a path; any other
// filter (targets, names, extensions) matches no path here.
func (p *sbProfile) match(f sexp, path string) bool {
	if !f.isList || len(f.list) == 0 {
		return false
	}
	arg := func() string {
		if len(f.list) < 2 {
			return ""
		}
		a := f.list[1]
		if a.isList && len(a.list) == 2 && a.list[0].atom == "param" {
			return p.params[a.list[1].atom]
		}
		return a.atom
	}
	switch f.list[0].atom {
	case "subpath":
		return path != "" && policy.Within(path, arg())
	case "literal":
		return path != "" && path == arg()
	case "regex":
		return path != "" && regexp.MustCompile(arg()).MatchString(path)
	case "require-all":
		for _, x := range f.list[1:] {
			if !p.match(x, path) {
				return false
			}
		}
		return true
	}
	return false
}

// TestSeatbeltReport: --check on macOS names each layer, and what holds
// each limit there; the model is told what differs.
func TestSeatbeltReport(t *testing.T) {
	caps := Capabilities{OS: "darwin", Arch: "arm64", Kernel: "macOS 14.7 (Darwin 23.6.0)", Identity: "the caller, uid 501"}
	report := caps.Report()
	for _, want := range []string{
		"platform      darwin/arm64, macOS 14.7 (Darwin 23.6.0)\n",
		"seatbelt      ok    /usr/bin/sandbox-exec",
		"processes     ok    a process group and a reaper",
		"network       ok    none",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	caps.Seatbelt = "sandbox_apply: Operation not permitted"
	if r := caps.Report(); !strings.Contains(r, "seatbelt      MISSING sandbox_apply") {
		t.Errorf("report without Seatbelt:\n%s", r)
	}

	l := policy.Limits{MaxProcesses: 1024, MaxFileBytes: 4 << 30, CPUTime: 10 * time.Minute}
	m, r := mechanisms(l, caps, 501)
	if r != nil {
		t.Fatal(r)
	}
	limits := m.Report(l)
	for _, want := range []string{
		"  memory         none\n",
		"  processes      1024 (rlimit per user)\n",
		"                 macOS counts RLIMIT_NPROC over all of your processes",
		"  file size      4 GiB (rlimit)\n",
		"  tmp size       none\n",
		"  cpu time       10m0s per process (rlimit)\n",
	} {
		if !strings.Contains(limits, want) {
			t.Errorf("limits lack %q:\n%s", want, limits)
		}
	}
	if c := m.Caveats(); !strings.Contains(c, "$TMPDIR") || strings.Contains(c, "per process") {
		t.Errorf("caveats on macOS: %q", c)
	}
	if c := (Mechanisms{}).Caveats(); c != "" {
		t.Errorf("caveats on Linux with a cgroup: %q", c)
	}
}

// TestSeatbeltArgs: sandbox-exec's command line gives the profile, each
// parameter as one -D argument whatever its value holds, then -- and the
// program.
func TestSeatbeltArgs(t *testing.T) {
	got := seatbeltArgs("(version 1)", []sbParam{{"WRITE_0", "/a=b c"}, {"SELF", "-x\n"}}, "/bin/prog", "arg")
	want := []string{"sandbox-exec", "-p", "(version 1)", "-D", "WRITE_0=/a=b c", "-D", "SELF=-x\n", "--", "/bin/prog", "arg"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestSeatbeltCredentialLinkOwners: a credential that is a symbolic link
// is hidden where it leads when what is there is the home owner's, and
// not where it is another's: a user's ~/.ssh pointing at /usr must not
// hide /usr from every command.
func TestSeatbeltCredentialLinkOwners(t *testing.T) {
	links := map[string]string{"/Users/v/.ssh": "/usr", "/Users/v/.aws": "/Users/v/dot/aws"}
	p := &policy.Policy{Workspace: "/Users/me/ws", Home: "/Users/me", Grants: []policy.Grant{{Path: "/Users/me/ws", Writable: true, Dir: true}}}
	fsys := newFakeFS("/Users/me/ws/", "/Users/v/.ssh@", "/Users/v/.aws@", "/Users/v/dot/aws/credentials", "/usr/bin/")
	fsys.owners = map[string]int{"/Users/v": 501, "/Users/v/dot/aws": 501, "/usr": 0}
	canon := fakeCanon(links)
	st := planSeatbelt(p, "/usr/local/bin/nanosandbox-mcp", fsys, canon)
	_, params := st.call("/private/var/folders/x/T/call-1", nil, nil, canon).render()
	values := map[string]bool{}
	for _, prm := range params {
		values[prm.Value] = true
	}
	if !values["/Users/v/dot/aws"] {
		t.Errorf("a credential link to its owner's file is not hidden where it leads: %q", params)
	}
	if values["/usr"] {
		t.Errorf("a user's credential link hides /usr, another's: %q", params)
	}
}
