package sandbox

import (
	"context"
	"io"
	"os"
	"testing"
	"time"

	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
)

// BenchmarkRunTrue is one sandboxed true through a prepared sandbox, as a
// server's call runs it: its CPU, and with -benchmem what a call
// allocates in the server. Calls are 5 ms apart, as an agent's are (the
// pause is not timed), so each starts with the server idle.
func BenchmarkRunTrue(b *testing.B) {
	ws := b.TempDir()
	if err := os.Chmod(ws, 0o755); err != nil {
		b.Fatal(err)
	}
	pol, err := policy.New(policy.Options{Workspace: ws, HostEnv: []string{"PATH=" + os.Getenv("PATH")}})
	if err != nil {
		b.Fatal(err)
	}
	sb, err := New(pol, Probe())
	if err != nil {
		b.Skipf("no sandbox here: %v", err)
	}
	defer sb.Close()
	run := func() {
		if _, err := sb.Run(context.Background(), &Command{Path: "true", Stdout: io.Discard, Stderr: io.Discard, Timeout: 30 * time.Second}); err != nil {
			b.Fatal(err)
		}
	}
	run()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		run()
		b.StopTimer()
		time.Sleep(5 * time.Millisecond)
		b.StartTimer()
	}
}
