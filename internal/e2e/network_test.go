package e2e

import (
	"bufio"
	"context"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The network rows of issue 12, all on loopback: a host server that
// --allow-net lists by address and port, reached by curl inside through the
// server's proxy; what is not listed gets the proxy's 403 with the flag
// that would allow it; what bypasses the proxy fails at once.

// requireCurl skips t on a machine without curl (.ci/run installs it).
func requireCurl(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("needs curl; this machine has none")
	}
}

// hostServer is an HTTP(S) server on the host's loopback that counts its
// requests.
type hostServer struct {
	*httptest.Server
	requests atomic.Int64
}

// addr returns "127.0.0.1:PORT".
func (s *hostServer) addr() string { return s.Listener.Addr().String() }

// startHostServer starts a server whose / says hello, whose /big sends
// 1 MiB, and whose /slow sends 64 KiB in eight parts 100 ms apart.
func startHostServer(t *testing.T, tls bool) *hostServer {
	t.Helper()
	s := &hostServer{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		switch r.URL.Path {
		case "/big":
			w.Write(make([]byte, 1<<20))
			return
		case "/slow":
			for range 8 {
				w.Write(make([]byte, 8<<10))
				w.(http.Flusher).Flush()
				time.Sleep(100 * time.Millisecond)
			}
			return
		}
		fmt.Fprintln(w, "hello from the host")
	})
	s.Server = httptest.NewUnstartedServer(h)
	s.Config.ErrorLog = log.New(io.Discard, "", 0) // clients that hang up mid-handshake
	if tls {
		s.StartTLS()
	} else {
		s.Start()
	}
	t.Cleanup(s.Close)
	return s
}

// noProxy makes curl use the proxy for the host's loopback too, which
// NO_PROXY keeps for the sandbox's own.
const noProxy = "curl -sS --noproxy '' "

func TestNetworkAllowList(t *testing.T) {
	requireCurl(t)
	e := newEnv(t)
	listed := startHostServer(t, false)
	unlisted := startHostServer(t, false)
	secure := startHostServer(t, true)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: secure.Certificate().Raw})
	e.write("ca.pem", string(ca), 0o644)
	flags := []string{"--allow-net", listed.addr(), "--allow-net", secure.addr()}
	_, listedPort, _ := net.SplitHostPort(listed.addr())

	t.Run("listed host and port", func(t *testing.T) {
		e := e.in(t)
		out := e.mustAllow(flags, noProxy+"http://"+listed.addr()+"/")
		if !strings.Contains(out, "hello from the host") {
			t.Errorf("got %q, want the host server's answer", out)
		}
	})
	for _, tt := range []struct{ name, url, allow string }{
		{"unlisted port", "http://" + unlisted.addr() + "/", "--allow-net " + unlisted.addr()},
		{"unlisted host", "http://unlisted.example/", "--allow-net unlisted.example"},
		{"unlisted host over HTTPS", "https://unlisted.example/", "--allow-net unlisted.example"},
		{"localhost is not 127.0.0.1", "http://localhost:" + listedPort + "/", "--allow-net localhost:" + listedPort},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := e.in(t)
			before := unlisted.requests.Load() + listed.requests.Load()
			stdout, stderr, code := e.run(flags, "sh", "-c", noProxy+"-i "+tt.url)
			// curl shows the status line of a refused CONNECT, the whole
			// response of a refused request.
			for _, want := range []string{"403", "nanosandbox-mcp sandbox", tt.allow} {
				if !strings.Contains(stdout+stderr, want) {
					t.Errorf("exit %d: output lacks %q\nstdout: %s\nstderr: %s", code, want, stdout, stderr)
				}
			}
			if !strings.Contains(stderr, "nanosandbox-mcp: note: network: the sandbox refused ") || !strings.Contains(stderr, "restart it with "+tt.allow) {
				t.Errorf("stderr lacks the note naming %s:\n%s", tt.allow, stderr)
			}
			if got := unlisted.requests.Load() + listed.requests.Load(); got != before {
				t.Errorf("a host server got %d requests", got-before)
			}
		})
	}
	t.Run("a listed name resolving to loopback", func(t *testing.T) {
		e := e.in(t)
		out := e.mustAllow([]string{"--allow-net", "localhost:" + listedPort}, noProxy+"http://localhost:"+listedPort+"/")
		if !strings.Contains(out, "hello from the host") {
			t.Errorf("got %q, want the host server's answer", out)
		}
	})
	t.Run("HTTPS through CONNECT", func(t *testing.T) {
		e := e.in(t)
		out := e.mustAllow(flags, noProxy+"--cacert ca.pem https://"+secure.addr()+"/")
		if !strings.Contains(out, "hello from the host") {
			t.Errorf("got %q, want the host server's answer", out)
		}
	})
	t.Run("20 parallel downloads", func(t *testing.T) {
		e := e.in(t)
		out := e.mustAllow(flags, `for i in $(seq 20); do `+noProxy+`-o /tmp/f$i http://`+listed.addr()+`/big & done; wait; cat /tmp/f* | wc -c`)
		if got := strings.TrimSpace(out); got != fmt.Sprint(20<<20) {
			t.Errorf("downloaded %s bytes, want %d", got, 20<<20)
		}
	})
	t.Run("bypassing the proxy", func(t *testing.T) {
		e := e.in(t)
		before := listed.requests.Load()
		unset := "env -u http_proxy -u HTTP_PROXY -u https_proxy -u HTTPS_PROXY -u all_proxy -u ALL_PROXY "
		// The sandbox's 127.0.0.1 is its own: nothing listens there.
		out := e.mustDeny(flags, unset+"curl -sS http://"+listed.addr()+"/")
		if !strings.Contains(out, "Failed to connect") {
			t.Errorf("got %q, want curl to fail to connect", out)
		}
		if got := listed.requests.Load(); got != before {
			t.Errorf("the host server got %d requests", got-before)
		}
		// Any other address: no route at all (a TEST-NET-1 address, RFC 5737).
		if out, code := e.attack(flags, "tcp-connect", "192.0.2.1:80"); code != 3 || !strings.Contains(out, "network is unreachable") {
			t.Errorf("tcp-connect 192.0.2.1:80: exit %d %q, want ENETUNREACH", code, out)
		}
	})
	t.Run("name lookups fail", func(t *testing.T) {
		e := e.in(t)
		began := time.Now()
		e.mustDeny(nil, "getent hosts example.com")
		t.Logf("a failed name lookup, with the sandbox's start: %s", time.Since(began))
	})
	t.Run("the proxy on the sandbox's loopback", func(t *testing.T) {
		e := e.in(t)
		// 127.0.0.1:3128 (0100007F:0C38) listening (0A), and only it.
		out := e.mustAllow(nil, `cat /proc/net/tcp /proc/net/tcp6 | awk '$4 == "0A" { print $2 }'; env | grep -i '_proxy=' | sort`)
		want := "0100007F:0C38\n" +
			"ALL_PROXY=http://127.0.0.1:3128\nHTTPS_PROXY=http://127.0.0.1:3128\nHTTP_PROXY=http://127.0.0.1:3128\nNO_PROXY=localhost,127.0.0.1,::1\n" +
			"all_proxy=http://127.0.0.1:3128\nhttp_proxy=http://127.0.0.1:3128\nhttps_proxy=http://127.0.0.1:3128\nno_proxy=localhost,127.0.0.1,::1\n"
		if out != want {
			t.Errorf("got\n%s\nwant\n%s", out, want)
		}
	})
}

// TestNetworkNothingListens serves calls that go through the proxy and
// checks the server: no socket of it listens on the host at any time, and
// once a call ends it holds no more sockets than before (the call's
// listening socket, in the sandbox's network namespace, and every
// connection are closed).
func TestNetworkNothingListens(t *testing.T) {
	requireCurl(t)
	e := newEnv(t)
	listed := startHostServer(t, false)
	s := e.serve("--allow-net", listed.addr())
	pid := s.cmd.Process.Pid
	// The first call, so that the spare for the next is there.
	if res, out := s.sh(t, "true"); res.IsError {
		t.Fatalf("true: %s", out.Error)
	}
	baseline := waitSockets(t, pid, -1)
	// Each download takes most of a second, so that its connections are
	// there when the server's sockets are looked at (every upstream
	// connection carries one request, and ends with it).
	calls := s.callAsync(context.Background(), map[string]any{"command": "sh", "args": []string{"-c",
		`for i in $(seq 5); do ` + noProxy + `-o /dev/null -w '%{http_code}\n' http://` + listed.addr() + `/slow & done; wait; sleep 1`}})
	most := 0 // sockets the server held during the call
	for done := false; !done; {
		select {
		case r := <-calls:
			if r.err != nil || r.res.IsError {
				t.Fatalf("call: %v %s", r.err, text(r.res))
			}
			if got := strings.Count(decode(t, r.res).Stdout, "200\n"); got != 5 {
				t.Errorf("%d of the 5 downloads through the proxy answered 200:\n%s", got, text(r.res))
			}
			done = true
		case <-time.After(20 * time.Millisecond):
		}
		if l := hostListeners(t, pid); len(l) > 0 {
			t.Fatalf("the server listens on the host: %v", l)
		}
		most = max(most, len(sockets(t, pid)))
	}
	if most <= baseline {
		t.Errorf("the server held %d sockets during the call, %d before: the proxy was not in it", most, baseline)
	}
	t.Logf("sockets of the server: %d between calls, up to %d during one", baseline, most)
	waitSockets(t, pid, baseline)
	if l := hostListeners(t, pid); len(l) > 0 {
		t.Fatalf("the server listens on the host: %v", l)
	}
}

// sockets returns the socket inodes process pid holds.
func sockets(t *testing.T, pid int) []string {
	t.Helper()
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join(dir, e.Name()))
		if inode, ok := strings.CutPrefix(target, "socket:["); err == nil && ok {
			out = append(out, strings.TrimSuffix(inode, "]"))
		}
	}
	return out
}

// waitSockets waits until pid holds want sockets, or at most want when
// want is -1: until the count is the same twice in a row, 100 ms apart.
// It returns the count.
func waitSockets(t *testing.T, pid, want int) int {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	last := -1
	for {
		n := len(sockets(t, pid))
		if want >= 0 && n <= want || want < 0 && n == last {
			return n
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server holds %d sockets, want %d", n, want)
		}
		last = n
		time.Sleep(100 * time.Millisecond)
	}
}

// hostListeners lists the sockets of pid that listen in the host's network
// namespace, the one this test runs in.
func hostListeners(t *testing.T, pid int) []string {
	t.Helper()
	held := map[string]bool{}
	for _, inode := range sockets(t, pid) {
		held[inode] = true
	}
	var out []string
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) > 9 && fields[3] == "0A" && held[fields[9]] {
				out = append(out, table+" "+fields[1])
			}
		}
		f.Close()
	}
	return out
}

// TestNetworkHostNetwork: with --host-network a command reaches the host's
// loopback directly, with no proxy and no proxy variables, and still no
// host unix socket: an abstract one belongs to the network namespace it
// now shares, and Landlock's scoping keeps it out of reach.
func TestNetworkHostNetwork(t *testing.T) {
	requireCurl(t)
	e := newEnv(t)
	flags := []string{"--host-network"}
	listed := startHostServer(t, false)
	stdout, stderr, code := e.run(flags, "sh", "-c", `env | grep -ci _proxy=; curl -sS http://`+listed.addr()+`/`)
	if code == 1 && strings.Contains(stderr, "Landlock ABI 6") {
		t.Skipf("needs Landlock ABI 6 for --host-network: %s", stderr)
	}
	if code != 0 || stdout != "0\nhello from the host\n" {
		t.Errorf("exit %d, stdout %q, want no proxy variable and the host server's answer\nstderr: %s", code, stdout, stderr)
	}
	abstract, n := listen(t, "unix", "@nsb-hostnet-"+uniqueMarker(t))
	if out, err := onHost(t, "abstract-connect", strings.TrimPrefix(abstract.Addr().String(), "@")); err != nil {
		t.Fatalf("abstract-connect on the host: %s, %v", out, err)
	}
	for deadline := time.Now().Add(5 * time.Second); n.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the host's own abstract-connect was never accepted")
		}
	}
	e.wantDenied(flags, "abstract-connect", strings.TrimPrefix(abstract.Addr().String(), "@"))
	agent, _ := listen(t, "unix", filepath.Join(e.home, "agent.sock"))
	e.wantDenied(flags, "unix-connect", agent.Addr().String())
	time.Sleep(200 * time.Millisecond) // a connection that got through is counted by then
	if got := n.Load(); got != 1 {
		t.Errorf("the host's abstract socket accepted %d connections from the sandbox", got-1)
	}
}

// TestNetworkNoteInResult: the MCP result lists the hosts the proxy
// refused during the call, also when the call timed out.
func TestNetworkNoteInResult(t *testing.T) {
	requireCurl(t)
	e := newEnv(t)
	s := e.serve("--timeout", "3s")
	for _, tt := range []struct {
		name, script string
		timedOut     bool
	}{
		{"exited", "curl -sS http://pkg.example.test/; exit 0", false},
		{"timed out", "curl -sS http://pkg.example.test/; sleep 30", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, out := s.sh(t, tt.script)
			if out.TimedOut != tt.timedOut || res.IsError != tt.timedOut {
				t.Errorf("timed_out %v, isError %v, want %v", out.TimedOut, res.IsError, tt.timedOut)
			}
			want := "\nnote: network: the sandbox refused pkg.example.test:80 (not in --allow-net); only what the server was started with --allow-net can be reached; to allow these, ask the user to restart it with --allow-net pkg.example.test"
			if !strings.Contains(text(res), want) {
				t.Errorf("result lacks the note:\n%s", text(res))
			}
			if !strings.Contains(out.Stdout, "nanosandbox-mcp: the sandbox refused pkg.example.test:80: not in --allow-net") {
				t.Errorf("stdout %q lacks the proxy's answer", out.Stdout)
			}
		})
	}
}
