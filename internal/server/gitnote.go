package server

import "regexp"

// gitRefused matches what git and the shell print when a command writes
// what the sandbox keeps read-only for git's sake: a repository's config
// (git config, git remote add, husky install) or its hooks. Linux's mounts
// answer EROFS or EBUSY, macOS's Seatbelt EPERM.
var gitRefused = regexp.MustCompile(`config file[^\n]*(Read-only file system|Device or resource busy|Operation not permitted)|\.git/(config|hooks|commondir)[^\n]*(Read-only file system|Device or resource busy|Operation not permitted)`)

// gitRefusalNote explains such a failure in one line the model can act on,
// or is "".
func gitRefusalNote(output string) string {
	if !gitRefused.MatchString(output) {
		return ""
	}
	return "git: a repository's config and hooks are read-only inside the sandbox, because the user's own git runs what they say; ask the user to make this change outside the sandbox (or to allow it with --writable PATH when starting the server)"
}
