package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
	"github.com/nanosandbox/nanosandbox-mcp/internal/sandbox"
)

// Agents cannot tell a denial from a bug, and retry, or ask the user to
// turn the sandbox off. So a result gets one line per cause of a denial,
// in words the model can act on and a person can fix, and only when the
// evidence matches the policy: an errno and a path in the output that the
// policy denies, a program that is not found but is installed in a hidden
// directory, a name lookup or connection refused with the network off.
// Never on an ordinary failure (false, grep with no match, a failing test).
//
// The expressions are compiled at their first use, not at start: every
// process of the sandbox is this binary again, and none of them but the
// server needs them.

var (
	// A path the kernel refused to write: shell, coreutils, Python, Node.
	// An absolute path unquoted begins a word: the "/_/x" of a relative
	// ".husky/_/x" is not one.
	readOnlyRe = lazyRegexp(`(?m)(?:'(/[^'\n]+)'|"(/[^"\n]+)"|(?:^|[^\w./~+-])(/[^\s:'"]+))[^\n]*?(?:(?i:read-only file system)|EROFS)|(?:(?i:read-only file system)|EROFS)[^\n]*?(?:'(/[^'\n]+)'|"(/[^"\n]+)"|(?:^|[^\w./~+-])(/[^\s:'"]+))`)
	// The same with a path relative to the working directory, as the
	// shell and git print one they were given: "./" or "../" first, or
	// the shell's "cannot create NAME:".
	readOnlyRelRe = lazyRegexp(`(?m)(?:'(\.\.?/[^'\n]+)'|cannot create ([^/\s:'"][^\s:'"]*):)[^\n]*?(?:(?i:read-only file system)|EROFS)`)
	// A path that is not there.
	missingRe = lazyRegexp(`(?m)(?:'(/[^'\n]+)'|"(/[^"\n]+)"|(?:^|[^\w./~+-])(/[^\s:'"]+))[^\n]*?(?:No such file or directory|ENOENT)|(?:No such file or directory|ENOENT)[^\n]*?(?:'(/[^'\n]+)'|"(/[^"\n]+)"|(?:^|[^\w./~+-])(/[^\s:'"]+))`)
	// A shell or env that did not find a program.
	notFoundRe = lazyRegexp(`(?m)(?:^|: )([A-Za-z0-9._+-]+): (?:command )?not found|env: '?([A-Za-z0-9._+-]+)'?: No such file or directory`)
	// Name lookups and connections with no network.
	offlineRe = lazyRegexp(`(?i)temporary failure in name resolution|could not resolve host|name or service not known|getaddrinfo (?:ENOTFOUND|EAI_AGAIN)|network is unreachable|ENETUNREACH|no such host|failed to resolve|nodename nor servname`)
)

// denialNotes explains the denials the output and error show.
func (h *handler) denialNotes(stdout, stderr string, runErr error) []string {
	var notes []string
	out := stdout + "\n" + stderr
	seen := map[string]bool{}
	add := func(n string) {
		if n != "" && !seen[n] {
			seen[n] = true
			notes = append(notes, n)
		}
	}
	add(gitRefusalNote(out))
	add(enclosingRepoNote(h.pol.EnclosingRepo, out))
	for _, p := range matches(readOnlyRe(), out) {
		add(h.readOnlyNote(p))
	}
	// Taken from the workspace, where commands start: a command that
	// changed directory may name another place, and the note says that
	// place's rule (a path inside the workspace gets the carve-out's).
	for _, p := range matches(readOnlyRelRe(), out) {
		add(h.readOnlyNote(filepath.Join(h.pol.Workspace, p)))
	}
	for _, p := range matches(missingRe(), out) {
		add(h.hiddenNote(p))
	}
	var se *sandbox.StartError
	if errors.As(runErr, &se) && se.NotFound {
		add(h.hiddenProgramNote(se.Path))
	}
	for _, m := range notFoundRe().FindAllStringSubmatch(out, 8) {
		add(h.hiddenProgramNote(m[1] + m[2]))
	}
	if offlineRe().MatchString(out) {
		add(h.offlineNote())
	}
	return notes
}

// offlineNote explains a failed name lookup or connection by the network
// the policy gives, or says nothing on the host's network, whose failures
// are its own.
func (h *handler) offlineNote() string {
	switch {
	case h.pol.HostNetwork:
		return ""
	case len(h.pol.AllowNet) > 0:
		return "network: in this sandbox only HTTP(S) through the proxy that HTTPS_PROXY names reaches the network, and only the hosts the user allowed (see the tool description); name lookups and other connections fail; the user can allow more hosts when starting the server (--allow-net HOST)"
	}
	return "network: commands have no network in this sandbox (only their own loopback), so downloads and name lookups fail; the user can allow hosts when starting the server (--allow-net HOST)"
}

// matches returns the paths the expression captured, cleaned, at most 8.
func matches(re *regexp.Regexp, s string) []string {
	var out []string
	for _, m := range re.FindAllStringSubmatch(s, 8) {
		for _, g := range m[1:] {
			if g != "" {
				out = append(out, filepath.Clean(strings.TrimRight(g, ".,;")))
				break
			}
		}
	}
	return out
}

// readOnlyNote explains a refused write to path, if the policy is why.
func (h *handler) readOnlyNote(path string) string {
	p := h.pol
	if strings.Contains(path, "/.git/") || strings.HasSuffix(path, "/.git") {
		return "" // git's own note says it
	}
	for _, g := range p.Grants {
		if policy.Within(path, g.Path) {
			if g.Writable {
				return fmt.Sprintf("read-only: %s is inside a writable path but kept read-only by the sandbox (a --read-only path, or one the user's git runs code from); the user decides what commands may change there", quotedPath(path))
			}
			return fmt.Sprintf("read-only: %s was granted read-only (%s); the user can make it writable when starting the server (--writable)", quotedPath(path), g.Flag)
		}
	}
	if p.Home != "" && policy.Within(path, p.Home) && p.PrivateHome != "" {
		// The private home is writable, but for the workspace's parent,
		// an empty read-only tree (sandbox's planStatic).
		if parent := filepath.Dir(p.Workspace); parent == p.Home || !policy.Within(parent, p.Home) || !policy.Within(path, parent) {
			return ""
		}
	} else if policy.Within(path, "/tmp") || policy.Within(path, "/var/tmp") || policy.Within(path, "/dev/shm") {
		return ""
	}
	return fmt.Sprintf("read-only: %s is outside the workspace (%s) and the writable paths, which are all commands may change; write inside the workspace, or the user can start the server with --writable PATH", quotedPath(path), p.Workspace)
}

// hiddenNote explains a path that is not there because the sandbox hides
// it. It says nothing of whether it exists outside.
func (h *handler) hiddenNote(path string) string {
	p := h.pol
	if p.Home == "" || p.HomeGranted || !policy.Within(path, p.Home) {
		return ""
	}
	for _, g := range p.Grants {
		if policy.Within(path, g.Path) {
			return "" // shown: missing for its own reasons
		}
	}
	return fmt.Sprintf("hidden: %s is in the home directory, which the sandbox hides (HOME inside is a private one); the user can show a path with --read-only PATH when starting the server", quotedPath(path))
}

// hiddenProgramNote explains a program not found that lives in a
// directory of the server's PATH the sandbox hides.
func (h *handler) hiddenProgramNote(name string) string {
	p := h.pol
	if name == "" || strings.Contains(name, "/") || p.Home == "" || p.HomeGranted {
		return ""
	}
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if !filepath.IsAbs(dir) || !policy.Within(dir, p.Home) {
			continue
		}
		shown := false
		for _, g := range p.Grants {
			if policy.Within(dir, g.Path) {
				shown = true
			}
		}
		if shown {
			continue
		}
		if fi, err := os.Stat(filepath.Join(dir, name)); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return fmt.Sprintf("not found: %s is installed in %s, inside the home directory the sandbox hides; the user can show it with --read-only %s when starting the server", name, dir, dir)
		}
	}
	return ""
}

// quotedPath is a path taken from a command's output, as a note says it:
// as it is when it reads as a path, else quoted and cut short, so that
// words a command put in it never read as the sandbox's own.
func quotedPath(p string) string {
	const max = 160
	// Only printable ASCII reads as a plain path: a no-break space, a
	// line separator or a right-to-left override can dress a sentence as
	// one.
	plain := len(p) <= max && !strings.ContainsFunc(p, func(r rune) bool { return r <= ' ' || r == '"' || r >= 0x7f })
	if plain {
		return p
	}
	if len(p) > max {
		p = p[:max]
		for !utf8.ValidString(p) {
			p = p[:len(p)-1]
		}
		return strconv.QuoteToASCII(p) + "..."
	}
	return strconv.QuoteToASCII(p)
}
