package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nanosandbox/nanosandbox-mcp/internal/gitguard"
	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
)

// A workspace like a real one, for the cost of git protection: 100,000
// files in 10,000 directories, and 20 nested repositories each with a
// commit, hooks and config, below one at the top.
var (
	bigOnce sync.Once
	bigWS   string
	bigErr  error
)

func bigWorkspace(b *testing.B) string {
	b.Helper()
	bigOnce.Do(func() {
		dir, err := os.MkdirTemp("", "nsb-bench-ws-")
		if err != nil {
			bigErr = err
			return
		}
		bigWS = filepath.Join(dir, "ws")
		git := func(dir string, args ...string) {
			if bigErr != nil {
				return
			}
			cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
			cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=b", "GIT_AUTHOR_EMAIL=b@example.com", "GIT_COMMITTER_NAME=b", "GIT_COMMITTER_EMAIL=b@example.com")
			if out, err := cmd.CombinedOutput(); err != nil {
				bigErr = fmt.Errorf("git %v: %v\n%s", args, err, out)
			}
		}
		os.MkdirAll(bigWS, 0o755)
		git(bigWS, "init", "-q")
		for r := range 20 {
			for d := range 500 {
				p := filepath.Join(bigWS, fmt.Sprintf("pkg%02d/mod%03d", r, d))
				if err := os.MkdirAll(p, 0o755); err != nil {
					bigErr = err
					return
				}
				for f := range 10 {
					os.WriteFile(filepath.Join(p, fmt.Sprintf("f%d.txt", f)), nil, 0o644)
				}
			}
			repo := filepath.Join(bigWS, fmt.Sprintf("pkg%02d", r))
			git(repo, "init", "-q")
			git(repo, "commit", "-q", "--allow-empty", "-m", "init")
			// As a clone has: a remote, which the guard lists with git.
			git(repo, "remote", "add", "origin", fmt.Sprintf("https://example.com/pkg%02d.git", r))
		}
	})
	if bigErr != nil {
		b.Fatal(bigErr)
	}
	return bigWS
}

// BenchmarkGitGuardCall is what git protection adds to one call on the big
// workspace, once the roots are watched: Begin (what to protect, with the
// stand-ins) and End (judging what changed: nothing here).
func BenchmarkGitGuardCall(b *testing.B) {
	ws := bigWorkspace(b)
	g, err := gitguard.New(gitguard.Config{Roots: []gitguard.Root{{Host: ws}}, Git: policy.FindProgram("git", os.Getenv("PATH"), nil)})
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	if err := g.Watch(); err != nil {
		b.Fatal(err)
	}
	var prot int
	b.ResetTimer()
	for range b.N {
		c, err := g.Begin()
		if err != nil {
			b.Fatal(err)
		}
		prot = len(c.Protect)
		c.End()
	}
	b.ReportMetric(float64(prot), "protections")
}

// BenchmarkGitGuardStart is the cold start on the big workspace: the walk
// that finds every directory, the one that watches each, and the listing
// of each repository's config by git (it names a remote), once per server.
func BenchmarkGitGuardStart(b *testing.B) {
	ws := bigWorkspace(b)
	for range b.N {
		g, err := gitguard.New(gitguard.Config{Roots: []gitguard.Root{{Host: ws}}, Git: policy.FindProgram("git", os.Getenv("PATH"), nil)})
		if err != nil {
			b.Fatal(err)
		}
		if err := g.Watch(); err != nil {
			b.Fatal(err)
		}
		g.Close()
	}
}

// BenchmarkCallTrueBigWorkspace is BenchmarkCallTruePaced on the big
// workspace: the whole call, with its 21 repositories' protections mounted.
func BenchmarkCallTrueBigWorkspace(b *testing.B) {
	ws := bigWorkspace(b)
	cmd := exec.Command(serverBin, "--workspace", ws)
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	call(b, cs, "true")
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		pause()
		b.StartTimer()
		call(b, cs, "true")
	}
}
