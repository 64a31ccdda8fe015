package sandbox

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/nanosandbox/nanosandbox-mcp/internal/gitconfig"
)

// A repository below the workspace, registered in the index as a gitlink
// (a submodule), is entered by the user's "git status" in the workspace,
// which obeys its config (core.fsmonitor runs a command). No mount can stop
// a command from creating one, so: at the start of a call the git
// directories of populated gitlinks are protected like the workspace's own,
// and at its end a gitlink populated during the call whose config or hooks
// would run anything is quarantined (its .git renamed) before the user's
// git can enter it. Git run by the user inside a directory a command made
// is out of reach: see the README's known limits.

const gitlinkMode = 0o160000

// gitlinks returns the paths of the gitlinks in a git index file (versions
// 2 to 4; hashLen 20 for SHA-1, 32 for SHA-256).
func gitlinks(index []byte, hashLen int) ([]string, error) {
	if len(index) < 12 || string(index[:4]) != "DIRC" {
		return nil, errors.New("not a git index")
	}
	version := binary.BigEndian.Uint32(index[4:8])
	if version < 2 || version > 4 {
		return nil, fmt.Errorf("git index version %d", version)
	}
	n := binary.BigEndian.Uint32(index[8:12])
	var links []string
	off := 12
	prev := ""
	for i := uint32(0); i < n; i++ {
		start := off
		fixed := 40 + hashLen + 2
		if off+fixed > len(index) {
			return nil, errors.New("git index truncated")
		}
		mode := binary.BigEndian.Uint32(index[off+24 : off+28])
		flags := binary.BigEndian.Uint16(index[off+40+hashLen : off+fixed])
		off += fixed
		if flags&0x4000 != 0 { // extended flags (version 3+)
			off += 2
		}
		var path string
		if version == 4 {
			strip, k := offsetVarint(index[off:])
			if k == 0 || int(strip) > len(prev) {
				return nil, errors.New("git index: bad path prefix")
			}
			off += k
			end := indexByte(index, off, 0)
			if end < 0 {
				return nil, errors.New("git index truncated")
			}
			path = prev[:len(prev)-int(strip)] + string(index[off:end])
			off = end + 1
		} else {
			end := indexByte(index, off, 0)
			if end < 0 {
				return nil, errors.New("git index truncated")
			}
			path = string(index[off:end])
			// Entries are padded with 1 to 8 NULs to a multiple of 8.
			off = start + (end-start+8)&^7
		}
		prev = path
		if mode == gitlinkMode {
			links = append(links, path)
		}
	}
	return links, nil
}

func indexByte(b []byte, from int, c byte) int {
	for i := from; i < len(b); i++ {
		if b[i] == c {
			return i
		}
	}
	return -1
}

// offsetVarint reads git's "offset" varint; k is 0 when b is too short.
func offsetVarint(b []byte) (v uint64, k int) {
	if len(b) == 0 {
		return 0, 0
	}
	c := b[0]
	v = uint64(c & 0x7f)
	k = 1
	for c&0x80 != 0 {
		if k >= len(b) || k > 9 {
			return 0, 0
		}
		c = b[k]
		v = (v+1)<<7 | uint64(c&0x7f)
		k++
	}
	return v, k
}

// hashLength is the object hash length of the repository with this config.
func hashLength(config []byte) int {
	for _, e := range gitconfig.Parse(config) {
		if e.Name() == "extensions.objectformat" && strings.EqualFold(e.Value, "sha256") {
			return 32
		}
	}
	return 20
}

// populatedGitlinks lists the gitlinks of the repository whose work tree is
// root and git directory gitdir that have a .git in the work tree, as
// absolute paths of those .git entries.
func populatedGitlinks(fsys fsInfo, root, gitdir string) []string {
	index, err := fsys.ReadFile(filepath.Join(gitdir, "index"))
	if err != nil {
		return nil
	}
	cfg, _ := fsys.ReadFile(filepath.Join(gitdir, "config"))
	links, err := gitlinks(index, hashLength(cfg))
	if err != nil {
		return nil
	}
	var out []string
	for _, l := range links {
		if l == "" || strings.HasPrefix(l, "/") || strings.Contains("/"+l+"/", "/../") {
			continue
		}
		dotgit := filepath.Join(root, l, ".git")
		if exists, _, _ := fsys.Lstat(dotgit); exists {
			out = append(out, dotgit)
		}
	}
	return out
}

// safeNestedConfig is what a nested repository's config may hold without
// being quarantined: what git itself writes, and settings that run nothing.
var safeNestedConfig = map[string]bool{
	"core.repositoryformatversion": true, "core.filemode": true, "core.bare": true,
	"core.logallrefupdates": true, "core.ignorecase": true, "core.precomposeunicode": true,
	"core.symlinks": true, "core.worktree": true, "core.autocrlf": true, "core.eol": true,
	"core.safecrlf": true, "core.quotepath": true, "core.sparsecheckout": true,
	"core.sparsecheckoutcone": true, "init.defaultbranch": true,
	"extensions.objectformat": true, "extensions.worktreeconfig": true,
	"user.name": true, "user.email": true, "pull.rebase": true, "pull.ff": true,
	"fetch.prune": true, "push.default": true, "gc.auto": true,
	"remote.*.url": true, "remote.*.pushurl": true, "remote.*.fetch": true, "remote.*.push": true,
	"remote.*.tagopt": true, "remote.*.prune": true, "remote.*.mirror": true,
	"branch.*.remote": true, "branch.*.merge": true, "branch.*.rebase": true, "branch.*.pushremote": true,
	"submodule.*.url": true, "submodule.*.active": true, "submodule.*.branch": true,
}

// dangerousGitDir says why a git directory would run something in the
// user's git, or "" if it would not: a config entry outside
// safeNestedConfig, a hook that is not a sample, or a redirection.
func dangerousGitDir(fsys fsInfo, gitdir string) string {
	for _, f := range []string{"config", "config.worktree"} {
		b, err := fsys.ReadFile(filepath.Join(gitdir, f))
		if err != nil {
			continue
		}
		for _, e := range gitconfig.Parse(b) {
			name := e.Section + "." + e.Key
			if e.Subsection != "" {
				name = e.Section + ".*." + e.Key
			}
			if !safeNestedConfig[name] {
				return fmt.Sprintf("its %s sets %s", f, e.Name())
			}
		}
	}
	if exists, _, _ := fsys.Lstat(filepath.Join(gitdir, "commondir")); exists {
		return "it has a commondir, which moves its config elsewhere"
	}
	for _, h := range fsys.ReadDir(filepath.Join(gitdir, "hooks")) {
		if !strings.HasSuffix(h, ".sample") {
			return "it has a hook, hooks/" + h
		}
	}
	return ""
}

// gitdirOf returns the git directory a .git entry stands for.
func gitdirOf(fsys fsInfo, dotgit string) (string, bool) {
	exists, dir, symlink := fsys.Lstat(dotgit)
	switch {
	case !exists || symlink:
		return "", false
	case dir:
		return dotgit, true
	}
	return readGitdirFile(fsys, dotgit)
}
