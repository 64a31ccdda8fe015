package policy

import (
	"slices"
	"testing"
)

// TestHomeCredentials: the tool managers' credentials are found in each
// version a listing names, and a path inside one is a credential.
func TestHomeCredentials(t *testing.T) {
	dirs := map[string][]string{
		"/h/.nvm/versions/node": {"v18.0.0", "v20.1.0"},
		"/h/.pyenv/versions":    {"3.12.1"},
	}
	got := HomeCredentials("/h", func(d string) []string { return dirs[d] })
	for _, want := range []string{"/h/.ssh", "/h/.npm-global/etc/npmrc", "/h/.nvm/versions/node/v18.0.0/etc/npmrc",
		"/h/.nvm/versions/node/v20.1.0/etc/npmrc", "/h/.pyenv/versions/3.12.1/pip.conf"} {
		if !slices.Contains(got, want) {
			t.Errorf("HomeCredentials lacks %s", want)
		}
	}
	for _, p := range got {
		if p == "/h/.nodenv/versions" || p == "/h/.nodenv/versions/*/etc/npmrc" {
			t.Errorf("HomeCredentials has %s, for a directory with nothing in it", p)
		}
	}
	for _, tt := range []struct {
		path string
		want bool
	}{
		{"/h/.nvm/versions/node/v22.0.0/etc/npmrc", true},
		{"/h/.npm-global/etc/npmrc", true},
		{"/h/.local/etc/npmrc", true},
		{"/h/.local/etc", false},
		{"/h/.config/git/credentials", true},
		{"/h/.nvm/versions/node/v22.0.0/etc", false},
		{"/h/.nvm/versions/node/v22.0.0/bin", false},
		{"/h/.npm-global", false},
		{"/other/.npm-global/etc/npmrc", false},
	} {
		if got := isCredential(tt.path, "/h"); got != tt.want {
			t.Errorf("isCredential(%s): got %v, want %v", tt.path, got, tt.want)
		}
	}
}
