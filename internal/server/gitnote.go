package server

import (
	"fmt"
	"regexp"
	"sync"
	"unicode/utf8"
)

// gitRefused matches what git and the shell print when a command writes
// what the sandbox keeps read-only for git's sake: a repository's config
// (git config, git remote add, husky install) or its hooks. Linux's mounts
// answer EROFS or EBUSY, macOS's Seatbelt EPERM.
var gitRefused = lazyRegexp(`config file[^\n]*(Read-only file system|Device or resource busy|Operation not permitted)|\.git/(config|hooks|commondir)[^\n]*(Read-only file system|Device or resource busy|Operation not permitted)`)

// gitRefusalNote explains such a failure in one line the model can act on,
// or is "".
func gitRefusalNote(output string) string {
	if !gitRefused().MatchString(output) {
		return ""
	}
	return "git: a repository's config and hooks are read-only inside the sandbox, because the user's own git runs what they say; ask the user to make this change outside the sandbox (or to allow it with --writable PATH when starting the server)"
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
