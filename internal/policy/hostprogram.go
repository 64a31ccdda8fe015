package policy

import (
	"os"
	"os/exec"
	"path/filepath"
)

// The server runs a few programs itself, on the host and outside any
// sandbox: the user's git, to read their identity and to judge git configs.
// Its PATH is the user's, and often names directories commands can write: a
// project's .venv/bin or node_modules/.bin, a --writable ~/.local/bin. A
// program found there may be one a command planted, which would then run
// with the user's rights and environment. So every program the server runs
// on the host is found by FindProgram, never by exec.LookPath.

// HostProgram returns the program name that the server may run on the host:
// the first on the server's PATH that lies, its symbolic links resolved,
// outside every path commands can write ([Policy.CommandWritable]). It
// returns the resolved path, or "" if there is no such program; a program
// found only where commands write is never returned.
func (p *Policy) HostProgram(name string) string {
	return FindProgram(name, p.hostPath, p.CommandWritable())
}

// CommandWritable lists, resolved, the host paths commands can write: the
// writable grants (the workspace first), the server's whole state directory
// (every workspace's private home is there, not only this one's), and the
// system's temporary directory, where a call gets its TMPDIR on macOS and
// without namespaces.
func (p *Policy) CommandWritable() []string {
	var out []string
	for _, g := range p.Grants {
		if g.Writable {
			out = append(out, g.Path)
		}
	}
	if p.PrivateHome != "" {
		out = append(out, p.PrivateHome)
	}
	for _, d := range []string{p.StateDir, os.TempDir()} {
		if d == "" || !filepath.IsAbs(d) {
			continue
		}
		out = append(out, filepath.Clean(d))
		if real := resolveExisting(d); real != filepath.Clean(d) {
			out = append(out, real)
		}
	}
	return out
}

// FindProgram returns the first executable name in the directories of path
// (a PATH list; relative entries are skipped) whose real path, symbolic
// links resolved, lies in none of the writable paths; "" if there is none.
// writable must hold resolved paths. A program whose links cannot be
// resolved is skipped.
func FindProgram(name, path string, writable []string) string {
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		found, err := exec.LookPath(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		real, err := filepath.EvalSymlinks(found)
		if err != nil {
			continue
		}
		inside := false
		for _, w := range writable {
			if Within(real, w) {
				inside = true
				break
			}
		}
		if !inside {
			return real
		}
	}
	return ""
}

// resolveExisting resolves the symbolic links of the longest part of path
// that exists, and appends the rest: where a directory the server has not
// made yet will be.
func resolveExisting(path string) string {
	path = filepath.Clean(path)
	rest := ""
	for d := path; ; d = filepath.Dir(d) {
		if real, err := filepath.EvalSymlinks(d); err == nil {
			return filepath.Join(real, rest)
		}
		if d == filepath.Dir(d) {
			return path
		}
		rest = filepath.Join(filepath.Base(d), rest)
	}
}
