package sandbox

import (
	"log/slog"
	"os"

	"github.com/nanosandbox/nanosandbox-mcp/internal/gitguard"
	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
)

// startGuard starts finding the git directories in the writable roots
// (DESIGN.md §2.3): the workspace, the --writable directories and the
// private home, which commands see at their own paths on macOS (there are
// no mounts). A --writable inside another writable root lifts git's
// protection there, as the user asked. What the guard keeps read-only for
// a call becomes carve-outs of its profile (seatbelt.go): write denied on
// the path and below, unlink and rename denied on each directory above it
// up to its root. The guard's stand-in for an absent hooks/ of a
// repository is protected the same way while calls run; an absent .git
// has nothing to protect, and a repository a command makes is judged when
// the call ends, as on Linux.
func (s *darwinSandbox) startGuard() error {
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
	if p.PrivateHome != "" {
		cfg.Roots = append(cfg.Roots, gitguard.Root{Host: p.PrivateHome})
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
