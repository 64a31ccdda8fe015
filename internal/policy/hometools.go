package policy

import (
	"os"
	"path/filepath"
	"strings"
)

// The home is hidden (a deny-list of secrets is never complete), but tools
// installed there are what the user runs: the server's PATH names them,
// and the sandbox passes that PATH on. For each PATH directory inside the
// hidden home, the tree the tool needs to run is shown again, read-only,
// and only that: the directory itself, and the root of the tool manager it
// belongs to, by this table. Credential files inside stay masked: those
// of Credentials, and those the managers keep in their own trees
// (toolCredentials).
// --no-home-tools turns it off.

// homeTool is one row: a PATH directory below Under (relative to the
// home) needs Roots (relative to the home) to run.
type homeTool struct {
	Under string
	Roots []string
	Why   string
}

var homeTools = []homeTool{
	{".pyenv", []string{".pyenv"}, "pyenv's shims run the Pythons under ~/.pyenv/versions with pyenv's own scripts"},
	{".nvm", []string{".nvm"}, "nvm keeps each Node under ~/.nvm/versions, run from there"},
	{".cargo/bin", []string{".cargo/bin", ".rustup"}, "rustup's proxies in ~/.cargo/bin run the toolchains in ~/.rustup; the rest of ~/.cargo (registry, credentials) stays private"},
	{".rustup", []string{".rustup"}, "a toolchain's own bin directory"},
	{".asdf", []string{".asdf"}, "asdf's shims run the versions installed under ~/.asdf"},
	{".local/share/mise", []string{".local/share/mise"}, "mise's shims and installs"},
	{".volta", []string{".volta"}, "Volta's shims run the tools under ~/.volta/tools"},
	{".sdkman", []string{".sdkman"}, "SDKMAN's candidates link to versions under ~/.sdkman"},
	{".rbenv", []string{".rbenv"}, "rbenv's shims run the Rubies under ~/.rbenv/versions"},
	{".nodenv", []string{".nodenv"}, "nodenv's shims run the Nodes under ~/.nodenv/versions"},
	{".goenv", []string{".goenv"}, "goenv's shims run the Gos under ~/.goenv/versions"},
	{".jenv", []string{".jenv"}, "jenv's shims"},
	{".bun", []string{".bun"}, "Bun's binary and global packages"},
	{".deno", []string{".deno"}, "Deno's binary and installed scripts"},
	{".local/share/pnpm", []string{".local/share/pnpm"}, "pnpm's binary and global packages"},
	{".npm-global", []string{".npm-global"}, "npm's global prefix, as npm's docs set it up"},
	{".yarn/bin", []string{".yarn"}, "Yarn's global binaries link into ~/.yarn"},
	{".poetry", []string{".poetry"}, "Poetry's installer's layout"},
	{".pixi", []string{".pixi"}, "pixi's binary and global environments"},
	{".ghcup", []string{".ghcup"}, "ghcup's GHC and Cabal"},
	{".elan", []string{".elan"}, "elan's Lean toolchains"},
	{".dotnet/tools", []string{".dotnet/tools"}, ".NET global tools"},
	{"go/bin", []string{"go/bin"}, "binaries go install put there (statically linked)"},
	{".local/bin", []string{".local/bin", ".local/share/pipx", ".local/pipx", ".local/lib"}, "scripts pip --user and pipx install: their packages live in ~/.local/lib and pipx's venvs"},
	{"bin", []string{"bin"}, "your own scripts"},
}

// HomeTool is a directory of the home shown again for the tools on PATH.
type HomeTool struct {
	Path string `json:"path"`
	Why  string `json:"why"`
}

// homeToolDirs finds, for the PATH directories inside home, what the tools
// there need. Paths are resolved; the home itself and credential paths are
// never shown.
//
// A PATH directory reached through a symbolic link where commands write
// (writable), or a tree in the server's state (stateDir), is never shown:
// commands could point it at any directory of the home between starts.
func homeToolDirs(path, home string, writable []string, stateDir string) []HomeTool {
	var out []HomeTool
	seen := map[string]bool{}
	add := func(p, why string) {
		real, _, err := resolveIn(p, writable) // an error, too, for a link in writable
		if err != nil || real == home || !Within(real, home) || seen[real] || isCredential(real, home) ||
			stateDir != "" && (Within(real, stateDir) || Within(stateDir, real)) {
			return
		}
		if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
			return
		}
		seen[real] = true
		out = append(out, HomeTool{Path: real, Why: why})
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		dir = filepath.Clean(dir)
		real, link, err := resolveIn(dir, writable)
		if link != "" {
			continue
		}
		if err == nil {
			dir = real
		}
		if dir == home || !Within(dir, home) {
			continue
		}
		rel, _ := filepath.Rel(home, dir)
		matched := false
		for _, t := range homeTools {
			if rel == t.Under || strings.HasPrefix(rel, t.Under+"/") {
				for _, r := range t.Roots {
					add(filepath.Join(home, r), t.Why)
				}
				matched = true
				break
			}
		}
		if !matched {
			add(dir, "a directory on the server's PATH")
		}
	}
	return out
}

// toolCredential is one row of toolCredentials: files below Root
// (relative to the home), each relative to it, that hold secrets.
type toolCredential struct {
	Root  string
	Files []string
	Why   string
}

// toolCredentials are the secrets kept inside the trees of the tool
// managers above, which the home tools show whole. A "*" element stands
// for every entry of its directory: each installed version, listed again
// at every call, so a version installed while the server runs has its
// file masked from the next call on, as a credential made then is. They
// are masked as Credentials are, in every home, wherever the tree shows
// (for the tools on PATH, or under a grant of the home).
//
// npm reads its global config from PREFIX/etc/npmrc, and writes there with
// npm config set -g and npm login --location=global: PREFIX is each Node's
// install directory, or the prefix the user's ~/.npmrc sets (~/.npm-global,
// as npm's docs set it up). pip reads a site config from sys.prefix/pip.conf
// (pip config set --site), Maven its global settings, servers' passwords
// included, from MAVEN_HOME/conf/settings.xml.
var toolCredentials = []toolCredential{
	{".npm-global", []string{"etc/npmrc"}, "npm's global config, at its prefix"},
	{".npm-packages", []string{"etc/npmrc"}, "npm's global config, at the other prefix guides set up"},
	{".local", []string{"etc/npmrc"}, "npm's global config, where ~/.npmrc sets prefix=~/.local"},
	{".nvm", []string{"versions/node/*/etc/npmrc", "versions/io.js/*/etc/npmrc"}, "npm's global config in each Node"},
	{".nodenv", []string{"versions/*/etc/npmrc"}, "npm's global config in each Node"},
	{".volta", []string{"tools/image/node/*/etc/npmrc"}, "npm's global config in each Node"},
	{".local/share/pnpm", []string{"nodejs/*/etc/npmrc"}, "npm's global config in each Node pnpm env installed"},
	{".asdf", []string{"installs/nodejs/*/etc/npmrc", "installs/python/*/pip.conf", "installs/maven/*/conf/settings.xml"},
		"npm's global config in each Node, pip's site config in each Python, Maven's global settings"},
	{".local/share/mise", []string{"installs/node/*/etc/npmrc", "installs/python/*/pip.conf"},
		"npm's global config in each Node, pip's site config in each Python"},
	{".pyenv", []string{"versions/*/pip.conf"}, "pip's site config in each Python"},
	{".sdkman", []string{"candidates/maven/*/conf/settings.xml"}, "Maven's global settings in each Maven"},
}

// HomeCredentials returns the credential paths of home: Credentials, and
// toolCredentials with each "*" element expanded by listing its directory
// with readDir (which returns no names where there is none).
func HomeCredentials(home string, readDir func(string) []string) []string {
	out := make([]string, 0, len(Credentials)+len(toolCredentials))
	for _, c := range Credentials {
		out = append(out, filepath.Join(home, c))
	}
	for _, t := range toolCredentials {
		for _, f := range t.Files {
			paths := []string{filepath.Join(home, t.Root)}
			for _, elem := range strings.Split(f, "/") {
				var next []string
				for _, p := range paths {
					if elem != "*" {
						next = append(next, filepath.Join(p, elem))
						continue
					}
					for _, name := range readDir(p) {
						next = append(next, filepath.Join(p, name))
					}
				}
				paths = next
			}
			out = append(out, paths...)
		}
	}
	return out
}

// isCredential reports whether p is, or lies in, a credential path of home
// (a "*" of toolCredentials matching any name). (A shown directory that
// holds one keeps it masked.)
func isCredential(p, home string) bool {
	for _, c := range Credentials {
		if Within(p, filepath.Join(home, c)) {
			return true
		}
	}
	rel, err := filepath.Rel(home, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return false
	}
	elems := strings.Split(rel, "/")
	for _, t := range toolCredentials {
		for _, f := range t.Files {
			pattern := strings.Split(filepath.Join(t.Root, f), "/")
			if len(elems) < len(pattern) {
				continue
			}
			match := true
			for i, e := range pattern {
				match = match && (e == "*" || e == elems[i])
			}
			if match {
				return true
			}
		}
	}
	return false
}
