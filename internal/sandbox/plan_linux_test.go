package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
)

// BenchmarkPlanCall measures what planning adds to each call on this host:
// "plan" is planCall alone over the plan made at the start, as every call
// did before credentials were checked per call; "check+plan" is what run
// does now, asking the host again for every answer the plan was made from
// (one lstat per credential path of each home, one listing of /home).
func BenchmarkPlanCall(b *testing.B) {
	home := b.TempDir()
	ws := filepath.Join(home, "ws")
	for _, d := range []string{ws, filepath.Join(home, ".config", "git"), filepath.Join(home, ".ssh")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	p := &policy.Policy{
		Workspace: ws,
		Home:      home,
		Grants: []policy.Grant{
			{Path: ws, Writable: true, Dir: true},
			{Path: filepath.Join(home, ".config"), Dir: true},
		},
	}
	sp := planStatic(p, hostFS{})
	b.Logf("%d answers checked per call, %d steps", len(sp.seen), len(sp.ops))
	b.Run("plan", func(b *testing.B) {
		for b.Loop() {
			planCall(p, sp, nil, hostFS{})
		}
	})
	b.Run("check+plan", func(b *testing.B) {
		for b.Loop() {
			planCall(p, *sp.current(p, hostFS{}), nil, hostFS{})
		}
	})
}

// TestCurrentPlanFresh checks that the first call soon after prepare takes
// its plan as it is, and that every other call asks the host again: a
// credential made since is in the plan it gets.
func TestCurrentPlanFresh(t *testing.T) {
	home := t.TempDir()
	ws := filepath.Join(home, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	// The home is shown (--read-only ~), so that its ~/.ssh is masked
	// and asked about wherever the host mounts things: inside a hidden
	// home, where no filesystem is mounted twice, it is not asked at all.
	p := &policy.Policy{Workspace: ws, Home: home, HomeGranted: true, Grants: []policy.Grant{
		{Path: home, Dir: true},
		{Path: ws, Writable: true, Dir: true},
	}}
	prepare := func(made time.Time) *linuxSandbox {
		s := &linuxSandbox{pol: p, mounts: watchMounts()}
		sp := planStatic(p, hostFS{})
		s.static.Store(&sp)
		s.planMade.Store(made.UnixNano())
		return s
	}
	ssh := filepath.Join(home, ".ssh")
	os.RemoveAll(ssh)
	s := prepare(time.Now())
	first := s.static.Load()
	if err := os.Mkdir(ssh, 0o700); err != nil {
		t.Fatal(err)
	}
	if got, err := s.currentPlan(); err != nil || got != first {
		t.Errorf("first call, right after prepare: plan %p (%v), want prepare's %p", got, err, first)
	}
	if got, err := s.currentPlan(); err != nil || got == first {
		t.Errorf("second call: prepare's plan again (%v), though ~/.ssh was made since", err)
	}

	os.RemoveAll(ssh)
	s = prepare(time.Now().Add(-time.Second))
	first = s.static.Load()
	os.Mkdir(ssh, 0o700)
	if got, err := s.currentPlan(); err != nil || got == first {
		t.Errorf("first call a second after prepare: prepare's plan (%v), though ~/.ssh was made since", err)
	}
}

// TestToolDirsListedWhereThere: planning lists a tool's version
// directories (~/.nvm/versions/node/*) only where they are, and a
// credential made later below one that was not there, whatever part of
// its path was missing, is seen by the next call's check.
func TestToolDirsListedWhereThere(t *testing.T) {
	for _, made := range []string{".nvm", ".nvm/versions", ".nvm/versions/node", ".nvm/versions/node/v22"} {
		t.Run(made, func(t *testing.T) {
			home := t.TempDir()
			ws := filepath.Join(home, "ws")
			if err := os.MkdirAll(filepath.Join(home, made), 0o755); err != nil {
				t.Fatal(err)
			}
			os.MkdirAll(ws, 0o755)
			// The home is shown (--read-only ~), so that its credentials are
			// masked one by one.
			p := &policy.Policy{Workspace: ws, Home: home, HomeGranted: true, Grants: []policy.Grant{
				{Path: home, Dir: true},
				{Path: ws, Writable: true, Dir: true},
			}}
			sp := planStatic(p, hostFS{})
			for _, a := range sp.seen {
				if a.kind == queryList && strings.HasPrefix(a.path, home+"/") {
					if exists, _, _ := (hostFS{}).Lstat(a.path); !exists {
						t.Errorf("listed %s, which is not there", a.path)
					}
				}
			}
			if sp.seen.changed(hostFS{}) {
				t.Fatal("changed, though nothing was")
			}
			npmrc := filepath.Join(home, ".nvm/versions/node/v22/etc/npmrc")
			os.MkdirAll(filepath.Dir(npmrc), 0o755)
			if err := os.WriteFile(npmrc, []byte("//r.test/:_authToken=x\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if !sp.seen.changed(hostFS{}) {
				t.Fatalf("%s made: no change seen", npmrc)
			}
			again := planStatic(p, hostFS{})
			if !slices.ContainsFunc(again.ops, func(o mountOp) bool { return o.Kind == opMask && o.Path == npmrc }) {
				t.Errorf("the plan made again does not mask %s: %+v", npmrc, again.ops)
			}
		})
	}
}

// countFS counts the questions asked of the host, and lists nothing in
// the directories of unlisted (as a directory one may search but not
// read answers).
type countFS struct {
	hostFS
	lstats, lists int
	unlisted      string
}

func (c *countFS) Lstat(p string) (bool, bool, bool) { c.lstats++; return c.hostFS.Lstat(p) }
func (c *countFS) ReadDir(p string) []string {
	c.lists++
	if p == c.unlisted {
		return nil
	}
	return c.hostFS.ReadDir(p)
}

// TestCheckByListing: the per-call check answers the missing credential
// paths of a directory with one listing of it, yet sees any of them made
// since, one at a time; where the listing is empty (a directory that can
// be searched, not read), each is asked. Both ways are tried: the record's
// check worked out at each call, and the plan's, kept from its first.
func TestCheckByListing(t *testing.T) {
	home := t.TempDir()
	ws := filepath.Join(home, "ws")
	for _, d := range []string{ws, filepath.Join(home, ".config")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	p := &policy.Policy{Workspace: ws, Home: home, HomeGranted: true, Grants: []policy.Grant{
		{Path: home, Dir: true},
		{Path: ws, Writable: true, Dir: true},
	}}
	sp := planStatic(p, hostFS{})
	var missing []string
	for _, a := range sp.seen {
		if a.kind == queryStat && a.stat == [3]bool{} && strings.HasPrefix(a.path, home+"/") {
			missing = append(missing, a.path)
		}
	}
	c := &countFS{}
	if sp.seen.changed(c) {
		t.Fatal("changed, though nothing was")
	}
	t.Logf("%d answers, %d missing in this home; the check asked %d Lstat and %d listings", len(sp.seen), len(missing), c.lstats, c.lists)
	if c.lstats+c.lists >= len(sp.seen) {
		t.Errorf("asked %d+%d for %d answers: nothing saved", c.lstats, c.lists, len(sp.seen))
	}
	tried := 0
	for _, m := range missing {
		if _, err := os.Lstat(filepath.Dir(m)); err != nil {
			continue // below another missing path: its parent's answer changes
		}
		if err := os.WriteFile(m, nil, 0o600); err != nil {
			continue
		}
		tried++
		if !sp.seen.changed(hostFS{}) {
			t.Errorf("%s made: no change seen", m)
		}
		if u := (&countFS{unlisted: filepath.Dir(m)}); !sp.seen.changed(u) {
			t.Errorf("%s made, its directory unreadable: no change seen", m)
		}
		// As a server's calls check it: the plan's own check, worked out
		// once (at the first of these) and kept.
		if !sp.changed(hostFS{}) {
			t.Errorf("%s made: the plan's kept check saw no change", m)
		}
		if u := (&countFS{unlisted: filepath.Dir(m)}); !sp.changed(u) {
			t.Errorf("%s made, its directory unreadable: the plan's kept check saw no change", m)
		}
		os.Remove(m)
	}
	if tried < 20 {
		t.Errorf("only %d missing credential paths tried", tried)
	}
	if sp.seen.changed(hostFS{}) || sp.changed(hostFS{}) {
		t.Error("changed after every one was undone")
	}
}
