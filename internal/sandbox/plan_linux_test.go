package sandbox

import (
	"os"
	"path/filepath"
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
