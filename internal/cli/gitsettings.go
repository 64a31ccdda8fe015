package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/nanosandbox/nanosandbox-mcp/internal/gitconfig"
	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
)

// The home is hidden, and with it the user's global git config: inside, git
// would not know the files the user ignores everywhere (.env, *.log), and an
// agent's git add -A would commit them; nor the filters that git-lfs puts
// there, so checkouts would write pointer files and commits store whole
// binaries. At each start the server carries into the private home what of
// that config changes how git treats a work tree, and the user's global
// ignore file, and nothing else of it (it can hold tokens in url.*.insteadOf,
// http.extraHeader, credential helpers). They go to git's own XDG place,
// ~/.config/git/config and ~/.config/git/ignore, which git reads before
// ~/.gitconfig: what a command sets with git config --global (in
// ~/.gitconfig, made empty if absent so that git writes there) and the
// repository's own config come first, as on the host. Only the sandbox's git
// reads them: nothing a command can do with them reaches the host.

// carriedKeys are the global settings carried, by name ("*" for any
// subsection): line endings, defaults of init, pull, push, merge, rebase
// and fetch, how diffs find renames, filters (git-lfs's), and the
// directories git may trust although another user owns them. None holds a
// credential.
var carriedKeys = map[string]bool{
	"core.autocrlf": true, "core.eol": true, "core.safecrlf": true, "core.quotepath": true,
	"core.whitespace": true, "core.precomposeunicode": true,
	"init.defaultbranch": true,
	"pull.rebase":        true, "pull.ff": true, "push.default": true, "push.autosetupremote": true, "push.followtags": true,
	"merge.conflictstyle": true, "merge.ff": true, "rebase.autosquash": true, "rebase.autostash": true,
	"rebase.updaterefs": true, "fetch.prune": true, "fetch.prunetags": true,
	"diff.algorithm": true, "diff.renames": true, "diff.colormoved": true,
	"branch.autosetupmerge": true, "branch.autosetuprebase": true, "branch.sort": true, "tag.sort": true,
	"status.showuntrackedfiles": true, "submodule.recurse": true, "rerere.enabled": true, "rerere.autoupdate": true,
	"filter.*.clean": true, "filter.*.smudge": true, "filter.*.process": true, "filter.*.required": true,
	"safe.directory": true,
}

func carried(section, subsection, key string) bool {
	if subsection != "" {
		return carriedKeys[section+".*."+key]
	}
	return carriedKeys[section+"."+key]
}

// setting is one global config entry.
type setting struct{ section, subsection, key, value string }

// globalSettings reads the user's global git config (not the system's,
// which the sandbox shows as it is), with its includes: from the files
// when nothing asks for git's own rules (readIdentity's), else from git,
// run in the workspace (git is policy.Policy.HostProgram's, or "").
func globalSettings(workspace, git string) (out []setting, ok bool) {
	if files, ok := globalFiles(); ok {
		var entries []gitconfig.Entry
		plain := true
		for _, f := range files {
			b, err := readSmall(f)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, false
			}
			e := gitconfig.Parse(b)
			if gitconfig.HasIncludes(e) {
				plain = false
				break
			}
			entries = append(entries, e...)
		}
		if plain {
			for _, e := range entries {
				out = append(out, setting{e.Section, e.Subsection, e.Key, e.Value})
			}
			return out, true
		}
	}
	if git == "" {
		return nil, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, git, "--no-pager", "config", "--global", "--includes", "--list", "--null")
	cmd.Dir = workspace
	cmd.Env = gitConfigEnv(os.Environ())
	var buf bytes.Buffer
	cmd.Stdout = &cappedBuffer{buf: &buf, max: 1 << 20}
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		// Exit 1 with nothing: no global config.
		var ee *exec.ExitError
		return nil, errors.As(err, &ee) && ee.ExitCode() == 1 && buf.Len() == 0
	}
	for _, rec := range strings.Split(buf.String(), "\x00") {
		k, v, _ := strings.Cut(rec, "\n")
		first, last := strings.IndexByte(k, '.'), strings.LastIndexByte(k, '.')
		if first <= 0 || last == len(k)-1 {
			continue
		}
		s := setting{section: strings.ToLower(k[:first]), key: strings.ToLower(k[last+1:]), value: v}
		if first != last {
			s.subsection = k[first+1 : last]
		}
		out = append(out, s)
	}
	return out, true
}

// globalFiles are git's global config files, in the order git reads them,
// or ok false where variables ask for git's own rules.
func globalFiles() (files []string, ok bool) {
	for _, v := range gitEnvRules {
		if _, set := os.LookupEnv(v); set {
			return nil, false
		}
	}
	if g, set := os.LookupEnv("GIT_CONFIG_GLOBAL"); set {
		return []string{g}, true
	}
	home, _ := os.UserHomeDir()
	if xdg := xdgConfig(home); xdg != "" {
		files = append(files, filepath.Join(xdg, "git", "config"))
	}
	if home != "" {
		files = append(files, filepath.Join(home, ".gitconfig"))
	}
	return files, true
}

func xdgConfig(home string) string {
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" {
		return x
	}
	if home == "" {
		return ""
	}
	return filepath.Join(home, ".config")
}

// globalHooksPath is the core.hooksPath of the user's global config, "~/"
// expanded, or "" if it has none or a relative one (each repository's).
func globalHooksPath(workspace, git string) string {
	settings, ok := globalSettings(workspace, git)
	if !ok {
		return ""
	}
	hooks := ""
	for _, s := range settings {
		if s.section == "core" && s.subsection == "" && s.key == "hookspath" {
			hooks = s.value
		}
	}
	if rest, ok := strings.CutPrefix(hooks, "~/"); ok {
		home, _ := os.UserHomeDir()
		hooks = filepath.Join(home, rest)
	}
	if !filepath.IsAbs(hooks) {
		return ""
	}
	return hooks
}

// gitSettingsFiles returns what the private home's ~/.config/git/config
// and ~/.config/git/ignore hold for these settings: the carried ones, and
// the content of the user's global ignore file (core.excludesFile, or
// git's default beside the XDG config).
//
// A file is read only where shows allows it (Policy.Shows): not through a
// link commands can re-point, never a credential or the server's state.
func gitSettingsFiles(settings []setting, hooks string, shows func(string) bool) (config, ignore, attributes []byte) {
	var b bytes.Buffer
	b.WriteString(settingsHeader)
	if hooks != "" {
		// Shown read-only inside (Policy.GlobalHooks): the user's hooks run
		// on the commits made there too.
		b.WriteString("[core]\n\thooksPath = " + quoteConfig(hooks) + "\n")
	}
	home, _ := os.UserHomeDir()
	excludes, attrs := "", ""
	if xdg := xdgConfig(home); xdg != "" {
		excludes, attrs = filepath.Join(xdg, "git", "ignore"), filepath.Join(xdg, "git", "attributes")
	}
	last := ""
	for _, s := range settings {
		if s.section == "core" && s.subsection == "" && (s.key == "excludesfile" || s.key == "attributesfile") {
			v := s.value
			if rest, ok := strings.CutPrefix(v, "~/"); ok && home != "" {
				v = filepath.Join(home, rest)
			}
			if s.key == "excludesfile" {
				excludes = v
			} else {
				attrs = v
			}
			continue
		}
		if !carried(s.section, s.subsection, s.key) || strings.ContainsAny(s.value, "\x00") {
			continue
		}
		head := "[" + s.section + "]"
		if s.subsection != "" {
			head = "[" + s.section + " " + quoteConfig(s.subsection) + "]"
		}
		if head != last {
			b.WriteString(head + "\n")
			last = head
		}
		b.WriteString("\t" + s.key + " = " + quoteConfig(s.value) + "\n")
	}
	if excludes != "" && filepath.IsAbs(excludes) && shows(excludes) {
		if content, err := readSmall(excludes); err == nil {
			ignore = append([]byte(ignoreHeader), content...)
		}
	}
	// Global attributes choose the filters (nbstripout's, git-lfs's) and
	// diff drivers for the paths they name.
	if attrs != "" && filepath.IsAbs(attrs) && shows(attrs) {
		if content, err := readSmall(attrs); err == nil {
			attributes = append([]byte(attributesHeader), content...)
		}
	}
	if b.Len() == len(settingsHeader) {
		return nil, ignore, attributes
	}
	return b.Bytes(), ignore, attributes
}

// The first lines of the files the server writes: what tells them from a
// command's, which the server leaves alone.
const (
	settingsHeader = "# Written by nanosandbox-mcp at each start, from the settings of your global git\n" +
		"# config that change how git treats a work tree; the rest of it stays hidden.\n" +
		"# Changes here are lost at the next start: git config --global writes ~/.gitconfig.\n"
	ignoreHeader     = "# Written by nanosandbox-mcp at each start, from your global git ignore file.\n"
	attributesHeader = "# Written by nanosandbox-mcp at each start, from your global git attributes file.\n"
)

// quoteConfig writes a value or subsection as git reads it back: in
// double quotes, with backslash, quote and newline escaped.
func quoteConfig(v string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\t", `\t`)
	return `"` + r.Replace(v) + `"`
}

// writeGitSettings writes the carried settings into the private home. The
// private home is a command's to write: nothing there is followed out of
// it (os.Root), each file is written whole under a new name and renamed
// into place (a link a command left there is replaced, never written
// through), and one that already holds the same bytes is left alone.
func writeGitSettings(p *policy.Policy) error {
	if p.PrivateHome == "" {
		return nil
	}
	settings, ok := globalSettings(p.Workspace, p.HostProgram("git"))
	if !ok {
		return nil // the user's global config could not be read: nothing is carried
	}
	config, ignore, attributes := gitSettingsFiles(settings, p.GlobalHooks, p.Shows)
	root, err := os.OpenRoot(p.PrivateHome)
	if err != nil {
		return err
	}
	defer root.Close()
	if config == nil && ignore == nil && attributes == nil {
		// Nothing to carry: what an earlier start wrote goes, and nothing
		// else is touched.
		for name, header := range map[string]string{".config/git/config": settingsHeader, ".config/git/ignore": ignoreHeader, ".config/git/attributes": attributesHeader} {
			if ours(root, name, header) {
				root.Remove(name)
			}
		}
		return nil
	}
	// What a command left in the way, not a directory (a file, a symlink
	// that may lead out), is moved aside within the private home.
	for _, d := range []string{".config", ".config/git"} {
		if fi, err := root.Lstat(d); err == nil && !fi.IsDir() {
			var r [8]byte
			rand.Read(r[:])
			if err := root.Rename(d, d+".nanosandbox-moved-"+hex.EncodeToString(r[:])); err != nil {
				return err
			}
		}
	}
	if err := root.MkdirAll(".config/git", 0o700); err != nil {
		return err
	}
	for name, content := range map[string][]byte{".config/git/config": config, ".config/git/ignore": ignore, ".config/git/attributes": attributes} {
		header := map[string]string{".config/git/config": settingsHeader, ".config/git/ignore": ignoreHeader, ".config/git/attributes": attributesHeader}[name]
		switch {
		case content != nil:
			if err := replaceIn(root, name, content); err != nil {
				return err
			}
		case ours(root, name, header):
			root.Remove(name)
		}
	}
	// Without a ~/.gitconfig, git config --global would write the XDG file.
	f, err := root.OpenFile(".gitconfig", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err == nil {
		return f.Close()
	}
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	return err
}

// ours reports whether name in root is a regular file that begins with
// header: one the server wrote.
func ours(root *os.Root, name, header string) bool {
	b, err := readRegularIn(root, name, 1<<20)
	return err == nil && bytes.HasPrefix(b, []byte(header))
}

// readRegularIn reads name in root if it is a regular file of at most max
// bytes: opened without blocking and without following a final symlink,
// and checked on the descriptor, so a FIFO swapped in after any check
// cannot hold the server.
func readRegularIn(root *os.Root, name string, max int64) ([]byte, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > max {
		return nil, errors.New("not a regular file of that size")
	}
	return io.ReadAll(io.LimitReader(f, max+1))
}

// replaceIn puts content at name in root, unless it holds it already.
func replaceIn(root *os.Root, name string, content []byte) error {
	if b, err := readRegularIn(root, name, int64(len(content))); err == nil && bytes.Equal(b, content) {
		return nil
	}
	var r [8]byte
	rand.Read(r[:])
	tmp := name + ".nanosandbox-" + hex.EncodeToString(r[:])
	if err := root.WriteFile(tmp, content, 0o644); err != nil {
		return err
	}
	if err := root.Rename(tmp, name); err != nil {
		root.Remove(tmp)
		return err
	}
	return nil
}
