// Package bench measures the server from outside, as a client does: the
// round trip of one call, the server's memory while a command streams far
// more output than the cap, and concurrent calls. Run with
//
//	go test -run '^$' -bench . -benchtime 200x ./bench
//
// and bench/startup.sh for the one-shot start against bubblewrap.
package bench

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nanosandbox/nanosandbox-mcp/internal/sandbox/sandboxtest"
)

var serverBin string

func TestMain(m *testing.M) {
	flag.Parse()
	if flag.Lookup("test.bench").Value.String() == "" {
		os.Exit(m.Run()) // no benchmark asked for (go test ./...): nothing to build
	}
	dir, err := os.MkdirTemp("", "nsb-bench-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	serverBin = filepath.Join(dir, "nanosandbox-mcp")
	build := exec.Command("go", "build", "-trimpath", "-o", serverBin, "..")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	if bigWS != "" {
		os.RemoveAll(filepath.Dir(bigWS))
	}
	os.Exit(code)
}

// connect starts the server on a fresh workspace and connects a client.
func connect(b *testing.B, flags ...string) (*mcp.ClientSession, *exec.Cmd) {
	b.Helper()
	ws := b.TempDir()
	cmd := exec.Command(serverBin, append([]string{"--workspace", ws}, flags...)...)
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs, cmd
}

func call(b *testing.B, cs *mcp.ClientSession, command string, args ...string) *mcp.CallToolResult {
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_command", Arguments: map[string]any{"command": command, "args": args}})
	if err != nil || res.IsError {
		b.Fatalf("%s %v: %v %+v", command, args, err, res)
	}
	return res
}

// BenchmarkCallTruePaced is BenchmarkCallTrue with a pause between calls,
// as a model takes between its tool calls: the server has its helper for
// the next call started by then.
func BenchmarkCallTruePaced(b *testing.B) {
	cs, _ := connect(b)
	call(b, cs, "true")
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		pause()
		b.StartTimer()
		call(b, cs, "true")
	}
}

// pause is the time a model takes between two tool calls, at least.
func pause() { time.Sleep(20 * time.Millisecond) }

// BenchmarkCallTrue is one run_command round trip of `true`, sequential.
func BenchmarkCallTrue(b *testing.B) {
	cs, _ := connect(b)
	call(b, cs, "true")
	b.ResetTimer()
	for range b.N {
		call(b, cs, "true")
	}
}

// BenchmarkYes1GiB streams 1 GiB through the tool: the output cap must hold
// while streaming, so the server's peak resident memory stays flat.
func BenchmarkYes1GiB(b *testing.B) {
	cs, cmd := connect(b, "--timeout", "5m")
	call(b, cs, "true")
	before := peakRSS(b, cmd.Process.Pid)
	b.ResetTimer()
	for range b.N {
		call(b, cs, "sh", "-c", "yes | head -c 1073741824")
	}
	b.StopTimer()
	after := peakRSS(b, cmd.Process.Pid)
	b.ReportMetric(float64(after)/(1<<20), "peak-RSS-MiB")
	b.ReportMetric(float64(after-before)/(1<<20), "RSS-growth-MiB")
	b.SetBytes(1 << 30)
}

// BenchmarkPipeYes1GiB is the same pipeline with no sandbox and no server,
// read at the end of one more pipe as the server reads it, for the ratio.
func BenchmarkPipeYes1GiB(b *testing.B) {
	b.SetBytes(1 << 30)
	for range b.N {
		if err := exec.Command("sh", "-c", "yes | head -c 1073741824 | cat > /dev/null").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkConcurrentSleep16 runs 16 calls of `sleep 1` at once with
// --max-concurrent 16: about one second each when they truly overlap.
func BenchmarkConcurrentSleep16(b *testing.B) {
	cs, _ := connect(b, "--max-concurrent", "16")
	call(b, cs, "true")
	b.ResetTimer()
	for range b.N {
		var wg sync.WaitGroup
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				call(b, cs, "sleep", "1")
			}()
		}
		wg.Wait()
	}
}

// BenchmarkIdleServer reports the resident memory of a server that has
// answered one call and waits.
func BenchmarkIdleServer(b *testing.B) {
	cs, cmd := connect(b)
	call(b, cs, "true")
	time.Sleep(100 * time.Millisecond)
	for range b.N {
		call(b, cs, "true")
	}
	b.ReportMetric(float64(currentRSS(b, cmd.Process.Pid))/(1<<20), "RSS-MiB")
	time.Sleep(100 * time.Millisecond) // the spare helper is started again
	var spare int64
	for _, pid := range sandboxtest.Descendants(cmd.Process.Pid) {
		spare += currentRSS(b, pid)
	}
	b.ReportMetric(float64(spare)/(1<<20), "spare-RSS-MiB")
}

func statusKB(b *testing.B, pid int, field string) int64 {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n << 10
		}
	}
	b.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

func peakRSS(b *testing.B, pid int) int64    { return statusKB(b, pid, "VmHWM") }
func currentRSS(b *testing.B, pid int) int64 { return statusKB(b, pid, "VmRSS") }
