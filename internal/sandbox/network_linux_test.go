package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
	"github.com/nanosandbox/nanosandbox-mcp/internal/sandbox/sandboxtest"
)

// TestProxyRefusesRebinding runs curl in a real sandbox against a host
// server on loopback, with names the proxy resolves through an injected
// lookup, all to 127.0.0.1: a name a pattern allows is refused (DNS
// rebinding onto the host's services), the same kind of name listed exactly
// gets through. The refusals come back as the result's note, and nothing of
// the call is left open in the server.
func TestProxyRefusesRebinding(t *testing.T) {
	for _, c := range []string{"linux", "userns", "landlock", "seccomp"} {
		sandboxtest.Require(t, c)
	}
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("needs curl; this machine has none")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "host server: %s\n", r.Host)
	}))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	ws := t.TempDir()
	os.Chmod(ws, 0o755)
	pol, err := policy.New(policy.Options{
		Workspace: ws,
		AllowNet:  []string{fmt.Sprintf("*.rebind.test:%d", port), fmt.Sprintf("listed.rebind.test:%d", port)},
		HostEnv:   []string{"PATH=" + os.Getenv("PATH")},
	})
	if err != nil {
		t.Fatal(err)
	}
	sb, err := New(pol, Probe())
	if err != nil {
		t.Skipf("no sandbox here: %v", err)
	}
	var mu sync.Mutex
	var looked []string
	sb.os.(*linuxSandbox).lookup = func(_ context.Context, host string) ([]netip.Addr, error) {
		mu.Lock()
		defer mu.Unlock()
		looked = append(looked, host)
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	before := openSockets(t)

	var stdout, stderr bytes.Buffer
	script := fmt.Sprintf(`%[1]s -sS --noproxy '' http://sneaky.rebind.test:%[2]d/; echo; %[1]s -sS --noproxy '' http://listed.rebind.test:%[2]d/`, curl, port)
	res, err := sb.Run(context.Background(), &Command{Path: "sh", Args: []string{"-c", script}, Stdout: &stdout, Stderr: &stderr, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatalf("run: %v\nstderr: %s", err, stderr.String())
	}
	out := stdout.String()
	t.Logf("looked up %v\n%s%s", looked, out, stderr.String())
	for _, want := range []string{
		fmt.Sprintf("the sandbox refused sneaky.rebind.test:%d: resolves to 127.0.0.1, a loopback address", port),
		fmt.Sprintf("host server: listed.rebind.test:%d\n", port),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if len(res.Notes) != 1 || !strings.HasPrefix(res.Notes[0], fmt.Sprintf("network: the sandbox refused sneaky.rebind.test:%d (resolves to 127.0.0.1", port)) {
		t.Errorf("notes: got %q, want one about sneaky.rebind.test", res.Notes)
	}
	// The proxy closed the call's listening socket and its connections
	// before Run returned; the host server closes its end of each once
	// it reads the proxy's close.
	deadline := time.Now().Add(5 * time.Second)
	for {
		after := openSockets(t)
		if after <= before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d sockets open before the call, %d after", before, after)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// openSockets counts this process's open sockets.
func openSockets(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.HasPrefix(target, "socket:") {
			n++
		}
	}
	return n
}

// TestHostNetworkNeedsLandlockScoping: on the host's network namespace only
// Landlock's scoping (ABI 6+) keeps commands from the host's abstract unix
// sockets; below it --host-network is refused, before anything is made.
func TestHostNetworkNeedsLandlockScoping(t *testing.T) {
	pol, err := policy.New(policy.Options{Workspace: t.TempDir(), HostNetwork: true})
	if err != nil {
		t.Fatal(err)
	}
	caps, mech := Capabilities{LandlockABI: 5}, Mechanisms{}
	_, err = newPlatform(pol, &caps, &mech)
	r, ok := err.(*Refusal)
	if !ok || !strings.Contains(r.Cause, "only Landlock ABI 6 (Linux 6.12) keeps commands from them, and this kernel has ABI 5") || !strings.Contains(r.Fix, "--allow-net") {
		t.Errorf("got %v, want a refusal naming Landlock ABI 6 and --allow-net", err)
	}
}
