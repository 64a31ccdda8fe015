package server

import (
	"strings"
	"testing"
)

func TestGitRefusalNote(t *testing.T) {
	for _, tt := range []struct {
		out  string
		note bool
	}{
		{"error: could not write config file /w/.git/config: Device or resource busy", true},
		{"error: could not lock config file .git/config: Read-only file system", true},
		{"sh: 1: cannot create .git/hooks/pre-commit: Read-only file system", true},
		{"cp: cannot create regular file '.git/hooks/pre-push': Read-only file system", true},
		{"error: could not lock config file .git/config: Operation not permitted", true}, // macOS
		{"sh: .git/hooks/pre-commit: Operation not permitted", true},
		{"sh: 1: cannot create /etc/passwd: Read-only file system", false},
		{"sh: /etc/passwd: Operation not permitted", false},
		{"fatal: not a git repository", false},
		{"", false},
	} {
		if got := gitRefusalNote(tt.out) != ""; got != tt.note {
			t.Errorf("%q: note %v, want %v", tt.out, got, tt.note)
		}
	}
}

func TestInvalidUTF8(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int
	}{
		{"plain", 0}, {"héllo ✓", 0}, {"\xff\xfe", 2}, {"a\xc3", 1}, {"\xe2\x9c", 2}, {"\x00nul", 0},
	} {
		if got := invalidUTF8(tt.in); got != tt.want {
			t.Errorf("%q: got %d, want %d", tt.in, got, tt.want)
		}
	}
}

// After a refused config write, git may say it did what it did not: the
// note says what was not done, and what to do instead.
func TestGitRefusalNoteSideEffects(t *testing.T) {
	const refused = "error: could not write config file /w/.git/config: Device or resource busy\n"
	for _, tt := range []struct {
		out, want string
	}{
		{refused + "branch 'feature' set up to track 'origin/feature'.", "the branch's upstream was not saved, whatever git printed: give it to git pull and git push each time"},
		{refused + "fatal: Failed to register url for submodule path 'lib'", "the submodule was not registered or updated"},
		{"error: could not lock config file /w/.git/modules/lib/config: Device or resource busy\nfatal: could not set 'core.worktree' to '../../../lib'", "stays at its old commit: do not commit it as it is"},
		{refused + "error: failed to initialize worktree config", "git could not record the change in the config, and did not make it"},
		{refused, "; ask the user to make this change outside the sandbox (or to start the server with --writable on that repository's .git directory"},
	} {
		if got := gitRefusalNote(tt.out); !strings.Contains(got, tt.want) {
			t.Errorf("%q: note %q, want it to hold %q", tt.out, got, tt.want)
		}
	}
}

func TestEnclosingRepoNote(t *testing.T) {
	for _, tt := range []struct {
		top, out string
		note     bool
	}{
		{"/m", "fatal: not a git repository (or any of the parent directories): .git", true},
		{"/m", "fatal: detected dubious ownership in repository at '/m'", true},
		{"/m", "fatal: Unable to create '/m/.git/index.lock': Read-only file system", true},
		{"", "fatal: not a git repository", false},
		{"/m", "all good", false},
	} {
		got := enclosingRepoNote(tt.top, tt.out)
		if (got != "") != tt.note {
			t.Errorf("%q %q: note %q, want one: %v", tt.top, tt.out, got, tt.note)
		}
		if tt.note && !strings.Contains(got, "--read-only /m --writable /m/.git") {
			t.Errorf("%q: note %q names no flags", tt.out, got)
		}
	}
}

// A removal of a repository that stops at its protected parts, and a
// tracked hooks file git could not replace, each get a note that says what
// was left, not the generic one.
func TestGitRefusalNoteLeftovers(t *testing.T) {
	for _, tt := range []struct {
		out, want string
	}{
		{"rm: cannot remove 'scratch/.git/config': Device or resource busy\nrm: cannot remove 'scratch/.git/hooks/pre-push.sample': Read-only file system", "could not be removed or moved whole"},
		{"mv: cannot move 'deps' to 'deps.old': Device or resource busy\n", ""},
		{"warning: failed to remove sub/.git/config: Device or resource busy", "could not be removed or moved whole"},
		{"error: failed to delete '/w/wt': Device or resource busy\nerror: failed to delete '/w/.git/worktrees/wt': Device or resource busy", "could not be removed or moved whole"},
		{"error: unable to unlink old '.githooks/pre-commit': Read-only file system\nSwitched to branch 'v2'", "git could not update .githooks/pre-commit"},
	} {
		got := gitRefusalNote(tt.out)
		if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
			t.Errorf("%q: note %q, want it to hold %q", tt.out, got, tt.want)
		}
	}
}

func TestSigningNote(t *testing.T) {
	out := "error: gpg failed to sign the data\nfatal: failed to write commit object"
	if got := gitRefusalNote(out); !strings.Contains(got, "commit unsigned (git -c commit.gpgsign=false commit") {
		t.Errorf("note %q", got)
	}
	if got := gitRefusalNote("fatal: failed to write commit object"); got != "" {
		t.Errorf("a failure that is not signing got %q", got)
	}
}
