package server

import "testing"

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
