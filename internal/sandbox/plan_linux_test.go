package sandbox

import (
	"os"
	"path/filepath"
	"testing"

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
