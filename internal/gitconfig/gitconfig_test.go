package gitconfig

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	got := Parse([]byte(`# a comment
[core]
	bare = false
	HooksPath = "./my hooks" ; trailing comment
	fsmonitor
[user]
	name = Ada \"The Countess\" Lovelace
	email = ada@example.com # comment
[include]
	path = a.inc
[includeIf "gitdir:~/Work/"]
	path = b.inc
[remote "origin"]
	url = https://example.com/x.git
[branch.main]
	remote = origin
[broken
	key with space = 1
[alias]
	long = log \
	  --oneline
`))
	want := []Entry{
		{"core", "", "bare", "false"},
		{"core", "", "hookspath", "./my hooks"},
		{"core", "", "fsmonitor", "true"},
		{"user", "", "name", `Ada "The Countess" Lovelace`},
		{"user", "", "email", "ada@example.com"},
		{"include", "", "path", "a.inc"},
		{"includeif", "gitdir:~/Work/", "path", "b.inc"},
		{"remote", "origin", "url", "https://example.com/x.git"},
		{"branch", "main", "remote", "origin"},
		{"alias", "", "long", "log \t  --oneline"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
	if !HasIncludes(got) || HasIncludes(got[:5]) {
		t.Error("HasIncludes is wrong")
	}
	if got[6].Name() != "includeif.gitdir:~/Work/.path" || got[3].Name() != "user.name" {
		t.Errorf("names: %q %q", got[6].Name(), got[3].Name())
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("[core]\nhooksPath = x\n"))
	f.Add([]byte("[a \"b\"]\nk=\"v\\\"#\" ; c\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, e := range Parse(b) {
			if e.Key == "" {
				t.Fatalf("empty key from %q", b)
			}
		}
	})
}
