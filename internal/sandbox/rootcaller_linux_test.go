package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
)

func TestGrantRoots(t *testing.T) {
	p := &policy.Policy{
		Grants: []policy.Grant{
			{Path: "/w", Writable: true},
			{Path: "/w/ro"},
			{Path: "/r"},
			{Path: "/r", Writable: true},
			{Path: "/deep/er/path"},
		},
		PrivateHome: "/h",
	}
	want := []grantRoot{{"/w", true}, {"/r", true}, {"/h", true}, {"/w/ro", false}, {"/deep/er/path", false}}
	if diff := cmp.Diff(want, grantRoots(p), cmp.AllowUnexported(grantRoot{})); diff != "" {
		t.Errorf("grantRoots (-want +got):\n%s", diff)
	}
}

func TestUnreachable(t *testing.T) {
	base := t.TempDir()
	for _, d := range []string{"open/ws", "closed/ws", "closed/granted/ws"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(base, "closed"), 0o700); err != nil {
		t.Fatal(err)
	}
	// TempDir makes base and its parent 0700: open them, so only closed is.
	os.Chmod(base, 0o755)
	os.Chmod(filepath.Dir(base), 0o755)
	var made []string
	closed := filepath.Join(base, "closed")
	for _, tt := range []struct {
		name     string
		grants   []string
		made     []string
		idmapped []string
		refused  string // the directory named, or "" for none
	}{
		{"open", []string{filepath.Join(base, "open/ws")}, made, nil, ""},
		{"below a closed directory", []string{filepath.Join(closed, "ws")}, made, nil, closed},
		{"the closed directory itself", []string{closed}, made, nil, ""},
		{"below a closed directory the sandbox makes", []string{filepath.Join(closed, "ws")}, []string{closed}, nil, ""},
		{"below an idmapped grant", []string{filepath.Join(closed, "granted/ws")}, made, []string{filepath.Join(closed, "granted")}, ""},
		{"the second grant", []string{filepath.Join(base, "open/ws"), filepath.Join(closed, "ws")}, made, nil, closed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := unreachable(tt.grants, tt.made, tt.idmapped)
			switch {
			case tt.refused == "" && r != nil:
				t.Errorf("got %+v, want no refusal", r)
			case tt.refused != "" && (r == nil || !strings.Contains(r.Cause, "may not enter "+tt.refused+" ") || !strings.Contains(r.Fix, "chmod o+x "+tt.refused)):
				t.Errorf("got %+v, want a refusal naming %s", r, tt.refused)
			}
		})
	}
}

// TestTakeFirst checks that the trees made at start go to the first helper
// only, and only while fresh; stale ones are closed, not given.
func TestTakeFirst(t *testing.T) {
	files := func() []*os.File {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		return []*os.File{r, w}
	}
	fresh := files()
	r := &rootCaller{first: fresh, firstMade: time.Now()}
	if got := r.takeFirst(); len(got) != 2 || got[0] != fresh[0] {
		t.Errorf("fresh trees: got %v, want them", got)
	}
	if got := r.takeFirst(); got != nil {
		t.Errorf("a second helper got the first one's trees %v", got)
	}
	closeAll(fresh)

	stale := files()
	r = &rootCaller{first: stale, firstMade: time.Now().Add(-time.Second)}
	if got := r.takeFirst(); got != nil {
		t.Errorf("trees a second old were given: %v", got)
	}
	if _, err := stale[1].Write([]byte("x")); err == nil {
		t.Error("the stale trees were not closed")
	}
}
