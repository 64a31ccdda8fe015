package sandbox

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/nanosandbox/nanosandbox-mcp/internal/gitconfig"
	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
)

// protection is one path inside a writable root through which the user's own
// git would later run code: hooks, config and what redirects them. It is
// mounted read-only for the call; if absent, a placeholder is created on the
// host for as long as calls run, so the command cannot create it.
type protection struct {
	Path string
	Dir  bool
	// Placeholder is set when Path is absent: the server creates it (an empty
	// directory, or a file holding Content) and removes it after the last call.
	Placeholder bool
	Content     string
	// Root is the writable root Path lies in: placeholders are created
	// beneath it without following any symlink.
	Root string
}

// gitState is what the end of a call compares with: the repositories in
// writable roots, and the gitlinks populated when the call began.
type gitState struct {
	repos     []repo
	populated map[string]bool // .git entries of populated gitlinks
}

// repo is one repository: its work tree and git directory.
type repo struct{ root, gitdir string }

// gitProtections lists, for every writable directory grant, what must be
// read-only for this call (DESIGN.md §2.3). It reads the repositories as they
// are now, since a call can change them for the next one. A path it cannot
// protect (a symlink where a directory of git's belongs) is refused.
func gitProtections(p *policy.Policy, fsys fsInfo) ([]protection, gitState, error) {
	st := gitState{populated: map[string]bool{}}
	prots, err := gitProtectionsInto(p, fsys, &st)
	return prots, st, err
}

func gitProtectionsInto(p *policy.Policy, fsys fsInfo, st *gitState) ([]protection, error) {
	var out []protection
	seen := map[string]bool{}
	add := func(pr protection) {
		if seen[pr.Path] || grantedWritable(p, pr.Path) {
			return
		}
		for _, o := range out {
			if o.Dir && policy.Within(pr.Path, o.Path) {
				return // inside a directory protected whole
			}
		}
		seen[pr.Path] = true
		pr.Root = writableRootOf(p, pr.Path)
		out = append(out, pr)
	}
	for _, g := range p.Grants {
		if !g.Writable || !g.Dir {
			continue
		}
		dotgit := filepath.Join(g.Path, ".git")
		exists, dir, symlink := fsys.Lstat(dotgit)
		if !exists && g.Path != p.Workspace {
			// Writable grants other than the workspace (caches, output
			// directories) that are not repositories are left as they are:
			// stand-ins there would be more intrusive than what they prevent.
			continue
		}
		// With no valid .git, git takes a directory holding a valid HEAD,
		// objects/ and refs/ for a repository itself: a command must not be
		// able to make the writable root one (git init --bare .).
		protectPath(p, fsys, filepath.Join(g.Path, "HEAD"), false, "", add)
		switch {
		case !exists:
			// No repository: a command must not create one whose hooks or
			// config the host's git would obey where the user works.
			add(protection{Path: dotgit, Dir: true, Placeholder: true})
			continue
		case symlink:
			return nil, refuseSymlink(dotgit)
		case !dir:
			add(protection{Path: dotgit})
			target, ok := readGitdirFile(fsys, dotgit)
			if ok && inWritable(p, target) {
				if err := gitDirProtections(p, fsys, target, add); err != nil {
					return nil, err
				}
			}
		default:
			if err := gitDirProtections(p, fsys, dotgit, add); err != nil {
				return nil, err
			}
		}
		// core.hooksPath and included config files, from the config git
		// would read for this worktree.
		gitdir := dotgit
		if !dir {
			if t, ok := readGitdirFile(fsys, dotgit); ok {
				gitdir = t
			}
		}
		// Repositories below, registered as gitlinks: the user's git
		// status enters them (see nested.go).
		st.repos = append(st.repos, repo{root: g.Path, gitdir: gitdir})
		for _, sub := range populatedGitlinks(fsys, g.Path, gitdir) {
			st.populated[sub] = true
			if _, subdir, symlink := fsys.Lstat(sub); symlink {
				return nil, refuseSymlink(sub)
			} else if subdir {
				if err := gitDirProtections(p, fsys, sub, add); err != nil {
					return nil, err
				}
				continue
			}
			add(protection{Path: sub})
			if target, ok := readGitdirFile(fsys, sub); ok && inWritable(p, target) {
				if err := gitDirProtections(p, fsys, target, add); err != nil {
					return nil, err
				}
			}
		}
		cfg, err := fsys.ReadFile(filepath.Join(gitdir, "config"))
		if err != nil {
			continue
		}
		hooksPath, includes := parseGitConfig(cfg)
		if hooksPath != "" && !strings.HasPrefix(hooksPath, "~") {
			hp := hooksPath
			if !filepath.IsAbs(hp) {
				hp = filepath.Join(g.Path, hp)
			}
			hp = filepath.Clean(hp)
			if inWritable(p, hp) {
				protectPath(p, fsys, hp, true, "", add)
			}
		}
		for _, inc := range includes {
			if strings.HasPrefix(inc, "~") {
				continue
			}
			ip := inc
			if !filepath.IsAbs(ip) {
				ip = filepath.Join(gitdir, ip)
			}
			ip = filepath.Clean(ip)
			if inWritable(p, ip) {
				protectPath(p, fsys, ip, false, "", add)
			}
		}
	}
	return out, nil
}

func refuseSymlink(path string) error {
	return &SetupError{Op: "protect git", Err: fmt.Sprintf("%s is a symbolic link, which the sandbox cannot keep read-only; replace it with what git expects there (a directory, or for .git a \"gitdir:\" file)", path)}
}

// gitDirProtections protects a git directory's hooks, config and the files
// that redirect them (commondir, config.worktree), its submodules' git
// directories whole, and its worktrees' config.
func gitDirProtections(p *policy.Policy, fsys fsInfo, gitdir string, add func(protection)) error {
	protectPath(p, fsys, filepath.Join(gitdir, "hooks"), true, "", add)
	protectPath(p, fsys, filepath.Join(gitdir, "config"), false, "", add)
	// commondir moves config and hooks elsewhere; "." keeps them here, so
	// it is a placeholder git reads as "no redirection".
	protectPath(p, fsys, filepath.Join(gitdir, "commondir"), false, ".\n", add)
	// config.worktree counts once extensions.worktreeConfig is on; empty,
	// it says nothing.
	protectPath(p, fsys, filepath.Join(gitdir, "config.worktree"), false, "", add)
	// Submodules' git directories, whole: their config runs in the user's
	// "git status", which recurses into them. (Commands cannot add, update
	// or commit in submodules then.)
	modules := filepath.Join(gitdir, "modules")
	if _, _, symlink := fsys.Lstat(modules); symlink {
		return refuseSymlink(modules)
	}
	protectPath(p, fsys, modules, true, "", add)
	// Linked worktrees' admin directories matter only to git run inside
	// those worktrees. A symlink there (which only the user, or a command
	// where no worktree existed, can have made) is not followed: the server
	// reads and creates nothing through it.
	worktrees := filepath.Join(gitdir, "worktrees")
	if _, _, symlink := fsys.Lstat(worktrees); symlink {
		return nil
	}
	for _, w := range fsys.ReadDir(worktrees) {
		wt := filepath.Join(worktrees, w)
		if _, _, symlink := fsys.Lstat(wt); symlink {
			continue
		}
		for _, name := range []string{"config", "commondir", "gitdir"} {
			if exists, _, _ := fsys.Lstat(filepath.Join(wt, name)); exists {
				add(protection{Path: filepath.Join(wt, name)})
			}
		}
		protectPath(p, fsys, filepath.Join(wt, "config.worktree"), false, "", add)
	}
	return nil
}

// protectPath protects path if it exists. If it does not, a placeholder
// stands in: path itself (a directory, or a file holding content), or the
// shallowest missing directory above it inside its writable root.
func protectPath(p *policy.Policy, fsys fsInfo, path string, wantDir bool, content string, add func(protection)) {
	if exists, dir, _ := fsys.Lstat(path); exists {
		add(protection{Path: path, Dir: dir})
		return
	}
	root := writableRootOf(p, path)
	stand := path
	for d := filepath.Dir(path); d != root && policy.Within(d, root); d = filepath.Dir(d) {
		if exists, _, _ := fsys.Lstat(d); exists {
			break
		}
		stand = d
	}
	if stand != path {
		add(protection{Path: stand, Dir: true, Placeholder: true})
		return
	}
	add(protection{Path: path, Dir: wantDir, Placeholder: true, Content: content})
}

// grantedWritable reports whether the user granted exactly path with
// --writable, which lifts its protection.
func grantedWritable(p *policy.Policy, path string) bool {
	for _, g := range p.Grants[1:] {
		if g.Writable && g.Path == path {
			return true
		}
	}
	return false
}

// inWritable reports whether path lies inside a writable grant.
func inWritable(p *policy.Policy, path string) bool {
	for _, g := range p.Grants {
		if g.Writable && policy.Within(path, g.Path) {
			return true
		}
	}
	return false
}

// readGitdirFile reads a ".git" file ("gitdir: PATH").
func readGitdirFile(fsys fsInfo, dotgit string) (string, bool) {
	b, err := fsys.ReadFile(dotgit)
	if err != nil {
		return "", false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	target, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
	if !ok {
		return "", false
	}
	target = strings.TrimSpace(target)
	if !filepath.IsAbs(target) {
		target = filepath.Join(filepath.Dir(dotgit), target)
	}
	return filepath.Clean(target), true
}

// parseGitConfig reads core.hooksPath and every include path from a git
// config file. It does not follow includes: each included file inside a
// writable root is protected instead.
func parseGitConfig(b []byte) (hooksPath string, includes []string) {
	for _, e := range gitconfig.Parse(b) {
		switch {
		case e.Section == "core" && e.Key == "hookspath":
			hooksPath = e.Value
		case (e.Section == "include" || e.Section == "includeif") && e.Key == "path":
			includes = append(includes, e.Value)
		}
	}
	return hooksPath, includes
}

// planCall completes the static plan with this call's carve-outs:
// --read-only grants inside writable roots and the git protections, each
// with pins on every directory between it and its writable root.
func planCall(p *policy.Policy, sp staticPlan, prots []protection, fsys fsInfo) []mountOp {
	ops := append([]mountOp(nil), sp.ops...)
	var carve []protection
	for _, g := range p.Grants {
		if g.Writable {
			continue
		}
		if root := writableRootOf(p, g.Path); root != "" {
			if exists, _, _ := fsys.Lstat(g.Path); exists {
				carve = append(carve, protection{Path: g.Path, Dir: g.Dir})
			}
		}
	}
	carve = append(carve, prots...)
	pinned := map[string]bool{}
	for _, c := range carve {
		root := writableRootOf(p, c.Path)
		if root == "" {
			continue
		}
		for d := filepath.Dir(c.Path); d != root && policy.Within(d, root); d = filepath.Dir(d) {
			if !pinned[d] {
				pinned[d] = true
				ops = append(ops, mountOp{Kind: opPin, Path: d, Dir: true})
			}
		}
		ops = append(ops, mountOp{Kind: opProtect, Path: c.Path, Dir: c.Dir})
	}
	sortOps(ops)
	return ops
}

// writableRootOf returns the deepest writable grant strictly above path.
func writableRootOf(p *policy.Policy, path string) string {
	root := ""
	for _, g := range p.Grants {
		if g.Writable && g.Path != path && policy.Within(path, g.Path) && len(g.Path) > len(root) {
			root = g.Path
		}
	}
	return root
}
