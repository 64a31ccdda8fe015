package server

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"
)

// gitRefused matches what git and the shell print when a command writes
// what the sandbox keeps read-only for git's sake: a repository's config
// (git config, git remote add, husky install) or its hooks. Linux's mounts
// answer EROFS or EBUSY, macOS's Seatbelt EPERM.
var gitRefused = lazyRegexp(`config file[^\n]*(Read-only file system|Device or resource busy|Operation not permitted)|\.git/(config|hooks|commondir)[^\n]*(Read-only file system|Device or resource busy|Operation not permitted)`)

// gitSideEffect matches what git says it did, or could not do, after a
// refused config write: branch tracking it reports as set up although it
// was not saved, a submodule it could not register or update.
var gitSideEffect = lazyRegexp(`(?m)set up to track|Failed to register url for submodule|could not set 'core\.worktree'|failed to initialize worktree config`)

// gitRemovalRefused matches a removal or move of a repository that stopped
// at what the sandbox keeps in place: rm, mv, git clean, git worktree
// remove.
var gitRemovalRefused = lazyRegexp(`(?:cannot remove|failed to remove|failed to delete|cannot move)[^\n]*\.git(?:/(?:config|hooks|commondir|config\.worktree)|/worktrees/[^/\n']+)?'?[^\n]*(?:Device or resource busy|Read-only file system|Operation not permitted)`)

// staleFile matches git leaving a file it could not replace: a tracked
// hooks directory (core.hooksPath) the sandbox keeps read-only.
var staleFile = lazyRegexp(`unable to unlink old '([^'\n]+)': (?:Read-only file system|Device or resource busy|Operation not permitted)`)

// signingFailed matches git failing to sign: the keys are hidden.
var signingFailed = lazyRegexp(`gpg failed to sign the data|error: gpg failed|failed to write commit object|ssh-keygen[^\n]*(?:No such file|Load key)`)

// gitRefusalNote explains such a failure in one line the model can act on,
// or is "".
func gitRefusalNote(output string) string {
	if signingFailed().MatchString(output) && strings.Contains(output, "sign") {
		return "git: git could not sign the commit or tag: the user's signing keys (~/.gnupg, ~/.ssh) are hidden inside the sandbox; commit unsigned (git -c commit.gpgsign=false commit, git -c tag.gpgsign=false tag) and ask the user to sign outside the sandbox (git commit --amend -S), or to sign at their next push"
	}
	if m := staleFile().FindStringSubmatch(output); m != nil {
		return "git: git could not update " + m[1] + ", which the sandbox keeps read-only (outside the workspace, or a repository's hooks directory, where the user's own git runs what it holds): it still has its old content, whatever git printed; do not commit it as it is, and ask the user to run git checkout -- " + m[1] + " outside the sandbox"
	}
	if gitRemovalRefused().MatchString(output) {
		return "git: a repository there could not be removed or moved whole: its config and hooks stay in place while calls run (the user's own git would run a planted one), and what else was in it may be gone, leaving an incomplete .git; ask the user to remove or move what is left outside the sandbox"
	}
	if !gitRefused().MatchString(output) {
		return ""
	}
	note := "git: a repository's config and hooks are read-only inside the sandbox, because the user's own git runs what they say"
	if m := gitSideEffect().FindString(output); m != "" {
		switch {
		case m == "set up to track":
			note += "; the branch's upstream was not saved, whatever git printed: give it to git pull and git push each time (git push origin HEAD:BRANCH, git pull origin BRANCH)"
		case strings.Contains(m, "submodule") || strings.Contains(m, "core.worktree"):
			note += "; the submodule was not registered or updated, and stays at its old commit: do not commit it as it is"
		default:
			note += "; git could not record the change in the config, and did not make it"
		}
	}
	return note + "; ask the user to make this change outside the sandbox (or to start the server with --writable on that repository's .git directory, which gives up its protection)"
}

// enclosingFailed matches git failing in a workspace that is a package of
// a repository whose .git the sandbox does not let it use or write.
var enclosingFailed = lazyRegexp(`not a git repository|detected dubious ownership|Unable to create '[^'\n]*/\.git/[^'\n]*\.lock'|/\.git/index\.lock'?: Read-only file system`)

// enclosingRepoNote explains git failing in a workspace that a repository
// at top holds, or is "".
func enclosingRepoNote(top, output string) string {
	if top == "" || !enclosingFailed().MatchString(output) {
		return ""
	}
	return "git: the workspace is inside the repository at " + top + ", whose .git commands cannot use or write; for git to work here, ask the user to make " + top + " the workspace (its config and hooks stay protected), or to start the server with --read-only " + top + " --writable " + filepath.Join(top, ".git") + ", with which git commits here but cannot update files outside the workspace: then do not switch branches, reset or pull inside, or the next commit -a undoes what git could not write"
}

// invalidUTF8 counts the bytes of s that are not UTF-8: JSON carries each
// as U+FFFD, so the model never sees them.
func invalidUTF8(s string) int {
	n := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			n++
		}
		i += size
	}
	return n
}

// binaryNote says how many bytes of a stream were replaced, and how to see
// them, or is "".
func binaryNote(stream string, n int) string {
	if n == 0 {
		return ""
	}
	what := fmt.Sprintf("%d bytes that are", n)
	if n == 1 {
		what = "1 byte that is"
	}
	return fmt.Sprintf("%s held %s not UTF-8, shown as U+FFFD; to see them, pipe the output through base64 or od -c", stream, what)
}

// lazyRegexp returns a function that compiles expr the first time it is
// called, and returns the same expression from then on.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
