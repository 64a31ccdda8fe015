package sandbox

import (
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// quarantineSuffix is added to the name of a nested repository's .git that
// would have run commands in the user's git.
const quarantineSuffix = ".quarantined-by-nanosandbox"

// quarantineNested renames the .git of every gitlink populated during the
// call whose git directory would run something in the user's git status,
// so that git no longer enters it, and says so.
func quarantineNested(st gitState, fsys fsInfo) []string {
	var notes []string
	for _, r := range st.repos {
		for _, dotgit := range populatedGitlinks(fsys, r.root, r.gitdir) {
			if st.populated[dotgit] {
				continue // protected for the whole call
			}
			gitdir, ok := gitdirOf(fsys, dotgit)
			if !ok {
				continue
			}
			why := dangerousGitDir(fsys, gitdir)
			if why == "" {
				continue
			}
			rel, _ := filepath.Rel(r.root, dotgit)
			to, err := quarantine(r.root, dotgit)
			if err != nil {
				notes = append(notes, fmt.Sprintf("%s is a repository registered as a submodule, and %s: the user's git status would run it; moving it aside failed (%v), so the user must check it before running git here", rel, why, err))
				continue
			}
			notes = append(notes, fmt.Sprintf("%s was moved to %s: it is a repository registered as a submodule, and %s, which the user's git status would run", rel, filepath.Base(to), why))
		}
	}
	return notes
}

// quarantine renames dotgit beside itself, beneath root and without
// following a symlink, never replacing anything.
func quarantine(root, dotgit string) (string, error) {
	parent, name, err := placeholderParent(protection{Root: root, Path: dotgit})
	if err != nil {
		return "", err
	}
	defer unix.Close(parent)
	for i := 0; i < 100; i++ {
		to := name + quarantineSuffix
		if i > 0 {
			to = fmt.Sprintf("%s-%d", to, i)
		}
		err := unix.Renameat2(parent, name, parent, to, unix.RENAME_NOREPLACE)
		if err == unix.EEXIST {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("rename: %w", err)
		}
		return filepath.Join(filepath.Dir(dotgit), to), nil
	}
	return "", fmt.Errorf("rename: too many quarantined copies")
}
