package policy

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
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
	if name == "git" && p.HostGit != "" {
		return p.HostGit // the user named it (--host-git), checked at start
	}
	writable := p.CommandWritable()
	if p.programs == nil {
		return FindProgram(name, p.hostPath, writable)
	}
	// The same search, asked again (a start asks for git four times), is
	// answered as before: only while this process runs (a server finds
	// git once as it starts), and only for the same paths commands write.
	key := name + "\x00" + p.hostPath + "\x00" + strings.Join(writable, "\x00")
	if v, ok := p.programs.Load(key); ok {
		return v.(string)
	}
	found := FindProgram(name, p.hostPath, writable)
	p.programs.Store(key, found)
	return found
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

// WritableByCommands lists, resolved, where on the host this server's
// commands can write: the writable grants (the workspace first), the
// private home, the server's whole state directory (every workspace's
// private home is there), and the directory of the calls' own TMPDIRs
// where that is on the host ([Policy.CallTmp]). CommandWritable is wider:
// it holds the system's temporary directory in every mode, which is not
// to be trusted for what the server runs or shows either.
func (p *Policy) WritableByCommands() []string {
	var out []string
	for _, g := range p.Grants {
		if g.Writable {
			out = append(out, g.Path)
		}
	}
	if p.PrivateHome != "" {
		out = append(out, p.PrivateHome)
	}
	for _, d := range []string{p.StateDir, p.CallTmp()} {
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
//
// Writable by this server's commands is not all: another server of the
// user's, with another workspace, writes where this one does not. So a
// program is taken only from the system's places (systemPrefixes), where
// no workspace is, with every directory on its way and itself owned by
// root and writable by nobody else, and with none of them a writable path
// shown under another name (a bind mount of the workspace). A git of the
// user's own elsewhere (Linuxbrew, ~/.local/bin) is named with --host-git.
func FindProgram(name, path string, writable []string) string {
	var ids []fileID
	for _, w := range writable {
		if id, ok := idOf(w); ok {
			ids = append(ids, id)
		}
	}
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
		if !inside && systemPlace(real) && safeAncestors(real, ids) {
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

// systemPrefixes are where systems and their package managers put
// programs: /usr (and /usr/local), /bin, /sbin, Nix's store, snaps,
// Homebrew's on macOS and Apple's developer tools.
var systemPrefixes = []string{"/usr/", "/bin/", "/sbin/", "/nix/store/", "/snap/", "/opt/homebrew/", "/usr/local/",
	"/Library/Developer/CommandLineTools/", "/Applications/Xcode.app/"}

func systemPlace(p string) bool {
	for _, prefix := range systemPrefixes {
		if len(p) > len(prefix) && p[:len(prefix)] == prefix {
			return true
		}
	}
	return false
}

// safeAncestors reports whether p and every directory above it are
// owned by root (or, on macOS, Homebrew's by the user, who installed it)
// and writable by no one else, and none of them is a writable path under
// another name (ids).
func safeAncestors(p string, ids []fileID) bool {
	for d := p; ; d = filepath.Dir(d) {
		fi, err := os.Lstat(d)
		if err != nil {
			return false
		}
		id, ok := statID(fi)
		if !ok {
			return false
		}
		for _, w := range ids {
			if id.dev == w.dev && id.ino == w.ino {
				return false
			}
		}
		if id.uid != 0 && !(homebrewOwned(d) && id.uid == uint32(os.Getuid())) {
			return false
		}
		if fi.Mode().Perm()&0o022 != 0 {
			return false
		}
		if d == filepath.Dir(d) {
			return true
		}
	}
}

// homebrewOwned reports whether d lies in Homebrew's prefix on macOS,
// which its user owns.
func homebrewOwned(d string) bool {
	return d == "/opt/homebrew" || len(d) > len("/opt/homebrew/") && d[:len("/opt/homebrew/")] == "/opt/homebrew/"
}

// fileID is what tells one directory from another, whatever its name.
type fileID struct {
	dev, ino uint64
	uid      uint32
}

func idOf(p string) (fileID, bool) {
	fi, err := os.Stat(p)
	if err != nil {
		return fileID{}, false
	}
	return statID(fi)
}

func statID(fi os.FileInfo) (fileID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino), uid: st.Uid}, true
}

// checkHostGit resolves the git the user named with --host-git: an
// executable file that commands cannot write.
func (p *Policy) checkHostGit(raw string) error {
	fe := func(err, hint string) error { return &FlagError{Flag: "--host-git", Value: raw, Err: err, Hint: hint} }
	if !filepath.IsAbs(raw) {
		return fe("not an absolute path", "pass the full path of the git to run, such as --host-git /home/linuxbrew/.linuxbrew/bin/git")
	}
	real, err := filepath.EvalSymlinks(raw)
	if err != nil {
		return fe("no such file", "pass the full path of an installed git")
	}
	if fi, err := os.Stat(real); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return fe("not an executable file", "pass the full path of an installed git")
	}
	for _, w := range p.CommandWritable() {
		if Within(real, w) {
			return fe("lies in "+w+", which commands can write: the server would run what a command put there", "pass a git outside the workspace, the --writable paths and the server's state")
		}
	}
	p.HostGit = real
	return nil
}
