package sandbox

import (
	"log/slog"
	"os"
	"path/filepath"

	"github.com/nanosandbox/nanosandbox-mcp/internal/gitguard"
	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
)

// startGuard starts watching the writable roots for git directories
// (DESIGN.md §2.3): the workspace, the --writable directories and the
// private home, which later calls write too. Masked paths in them are
// left out (commands cannot reach them); a --writable inside another
// writable root lifts git's protection there, as the user asked.
func (s *linuxSandbox) startGuard() error {
	p := s.pol
	var cfg gitguard.Config
	for _, g := range p.Grants {
		if !g.Writable {
			cfg.Readable = append(cfg.Readable, g.Path)
		}
		if !g.Writable || !g.Dir {
			continue
		}
		nested := false
		for _, o := range p.Grants {
			if o.Writable && o.Path != g.Path && policy.Within(g.Path, o.Path) {
				nested = true
			}
		}
		if nested {
			cfg.Exempt = append(cfg.Exempt, g.Path)
			continue
		}
		cfg.Roots = append(cfg.Roots, gitguard.Root{Host: g.Path})
	}
	if p.PrivateHome != "" && p.Home != "" {
		at := p.Home // mounted there
		if s.reduced {
			at = p.PrivateHome // nothing is mounted: at its own path
		}
		cfg.Roots = append(cfg.Roots, gitguard.Root{Host: p.PrivateHome, Sandbox: at})
	}
	// Without mounts nothing keeps the protections read-only: the user
	// gave git's carve-outs up by name (policy.Unkept).
	cfg.Unmounted = s.reduced
	// What the first plan hides; a credential that appears later is
	// scanned like the rest, which protects more, never less.
	var hidden []mountOp
	if sp := s.static.Load(); sp != nil { // nil without namespaces
		hidden = sp.ops
	}
	for _, op := range hidden {
		if op.Kind != opHide && op.Kind != opMask {
			continue
		}
		h := op.Path
		if p.PrivateHome != "" && policy.Within(h, p.Home) {
			rel, _ := filepath.Rel(p.Home, h)
			h = filepath.Join(p.PrivateHome, rel)
		}
		cfg.Hidden = append(cfg.Hidden, h)
	}
	cfg.Git = p.HostProgram("git") // outside every path commands write
	cfg.Home, _ = os.UserHomeDir()
	cfg.GlobalConfigs = gitguard.GlobalConfigFiles(os.Getenv, cfg.Home, cfg.Git)
	cfg.StateDir = p.StateDir
	cfg.Log = func(msg string) { slog.Warn(msg) }
	g, err := gitguard.New(cfg)
	if err != nil {
		return setupError("watch for git repositories", err)
	}
	s.guard = g
	return nil
}
