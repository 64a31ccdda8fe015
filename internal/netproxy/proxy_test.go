package netproxy

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
)

// running is a proxy serving one call on a loopback listener.
type running struct {
	p    *Proxy
	addr string // host:port of the listener
	url  *url.URL
	stop context.CancelFunc
	done chan error
}

// start serves p on a fresh loopback listener until the test ends or stop
// is called.
func start(t *testing.T, p *Proxy) *running {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	r := &running{p: p, addr: l.Addr().String(), stop: stop, done: make(chan error, 1)}
	r.url = &url.URL{Scheme: "http", Host: r.addr}
	go func() { r.done <- p.Serve(ctx, l) }()
	t.Cleanup(func() { r.end(t) })
	return r
}

// end ends the call and waits for Serve to return.
func (r *running) end(t *testing.T) {
	t.Helper()
	r.stop()
	select {
	case err := <-r.done:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
		r.done <- nil // for a second end
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return 5s after its call ended")
	}
}

// client returns an HTTP client that sends everything through r, trusting
// roots for TLS (nil: the system's).
func (r *running) client(roots *x509.CertPool) *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			Proxy:             http.ProxyURL(r.url),
			TLSClientConfig:   &tls.Config{RootCAs: roots},
			DisableKeepAlives: true,
		},
		Timeout: 20 * time.Second,
	}
}

func hosts(t *testing.T, raw ...string) []policy.Host {
	t.Helper()
	h, err := policy.ParseNetwork(raw, false)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// lookupTable resolves the names it holds, and no others.
func lookupTable(table map[string][]string) func(context.Context, string) ([]netip.Addr, error) {
	return func(_ context.Context, host string) ([]netip.Addr, error) {
		var out []netip.Addr
		for _, s := range table[host] {
			out = append(out, netip.MustParseAddr(s))
		}
		if out == nil {
			return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
		}
		return out, nil
	}
}

func port(t *testing.T, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Port()
}

func get(t *testing.T, c *http.Client, rawURL string) (int, string, error) {
	t.Helper()
	resp, err := c.Get(rawURL)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func TestPlainHTTP(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello %s %s", r.Host, r.URL.Path)
	}))
	defer up.Close()
	r := start(t, &Proxy{Allow: hosts(t, "127.0.0.1:"+port(t, up.URL))})
	code, body, err := get(t, r.client(nil), up.URL+"/a/b")
	if err != nil || code != 200 || body != "hello "+strings.TrimPrefix(up.URL, "http://")+" /a/b" {
		t.Errorf("got %d %q %v", code, body, err)
	}
	if got, more := r.p.Refused(); len(got) != 0 || more != 0 {
		t.Errorf("refused %v, want nothing", got)
	}
}

// TestRefused: what is not listed gets 403 at once, with the destination
// and the flag that would allow it in the body (plain HTTP) or the status
// line (CONNECT), and the call's refusals list it once.
func TestRefused(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the upstream was reached: %s %s", r.Method, r.URL)
	}))
	defer up.Close()
	p := port(t, up.URL)
	dialed := false
	r := start(t, &Proxy{
		Allow: hosts(t, "127.0.0.1:1", "example.com"),
		Lookup: func(context.Context, string) ([]netip.Addr, error) {
			t.Error("a refused name was looked up")
			return nil, errors.New("no")
		},
		Dial: func(context.Context, string, string) (net.Conn, error) {
			dialed = true
			return nil, errors.New("no")
		},
	})
	c := r.client(nil)
	for _, tt := range []struct {
		name, url, body, allow string
	}{
		{"unlisted port", up.URL + "/x", "the sandbox refused 127.0.0.1:" + p + ": not in --allow-net", "--allow-net 127.0.0.1:" + p},
		{"unlisted host", "http://other.test/x", "the sandbox refused other.test:80: not in --allow-net", "--allow-net other.test\n"},
		{"listed host, other port", "http://example.com:8080/", "the sandbox refused example.com:8080", "--allow-net example.com:8080"},
		{"subdomain of a listed host", "http://www.example.com/", "the sandbox refused www.example.com:80", "--allow-net www.example.com\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			began := time.Now()
			code, body, err := get(t, c, tt.url)
			if err != nil || code != 403 || !strings.Contains(body, tt.body) || !strings.Contains(body, tt.allow) {
				t.Errorf("got %d %q %v; want 403 naming %q and %q", code, body, err, tt.body, tt.allow)
			}
			if d := time.Since(began); d > time.Second {
				t.Errorf("took %s", d)
			}
		})
	}
	// CONNECT: a client shows the status line.
	_, err := c.Get("https://other.test:8443/")
	if err == nil || !strings.Contains(err.Error(), "Forbidden by the nanosandbox-mcp sandbox: other.test:8443: not in --allow-net; to allow it: --allow-net other.test:8443") {
		t.Errorf("CONNECT: got %v, want the refusal in the status line", err)
	}
	// A second refusal of the same destination is listed once.
	get(t, c, "http://other.test/y")
	want := []Refusal{
		{Dest: "127.0.0.1:" + p, Why: "not in --allow-net", Allow: "127.0.0.1:" + p},
		{Dest: "example.com:8080", Why: "not in --allow-net", Allow: "example.com:8080"},
		{Dest: "other.test:80", Why: "not in --allow-net", Allow: "other.test"},
		{Dest: "other.test:8443", Why: "not in --allow-net", Allow: "other.test:8443"},
		{Dest: "www.example.com:80", Why: "not in --allow-net", Allow: "www.example.com"},
	}
	got, more := r.p.Refused()
	if diff := cmp.Diff(want, got); diff != "" || more != 0 {
		t.Errorf("Refused (-want +got, %d more):\n%s", more, diff)
	}
	if dialed {
		t.Error("a refused destination was dialled")
	}
}

// TestNoAllowList: the zero Proxy refuses everything.
func TestNoAllowList(t *testing.T) {
	r := start(t, &Proxy{})
	code, body, err := get(t, r.client(nil), "http://127.0.0.1:9/")
	if code != 403 || !strings.Contains(body, "--allow-net 127.0.0.1:9") {
		t.Errorf("got %d %q %v, want 403", code, body, err)
	}
}

func TestNotAProxyRequest(t *testing.T) {
	r := start(t, &Proxy{Allow: hosts(t, "example.com")})
	for _, tt := range []struct{ request, want string }{
		{"GET / HTTP/1.1\r\nHost: example.com\r\n\r\n", "this is the sandbox's HTTP proxy"},
		{"GET https://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n", "send CONNECT"},
		{"CONNECT example.com HTTP/1.1\r\nHost: example.com\r\n\r\n", "no port"},
		{"CONNECT 127.1:80 HTTP/1.1\r\nHost: 127.1:80\r\n\r\n", "dotted-quad"},
	} {
		c, err := net.Dial("tcp", r.addr)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, tt.request)
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%q: %v", tt.request, err)
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 400 || !strings.Contains(string(b), tt.want) {
			t.Errorf("%q: got %d %q, want 400 and %q", tt.request, resp.StatusCode, b, tt.want)
		}
		c.Close()
	}
}

// TestRebinding: a name that resolves to the host's own or private
// addresses reaches them only when the user listed it exactly; and the
// proxy dials the address it checked, never the name again.
func TestRebinding(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "inside") }))
	defer up.Close()
	p := port(t, up.URL)
	lookup := lookupTable(map[string][]string{
		"a.rebind.test":     {"127.0.0.1"},
		"b.rebind.test":     {"93.184.215.14", "10.1.2.3"},
		"c.rebind.test":     {"::ffff:192.168.1.1"},
		"d.rebind.test":     {"169.254.169.254"},
		"e.rebind.test":     {"64:ff9b::a00:1"},
		"exact.rebind.test": {"127.0.0.1"},
		"registry.test":     {"127.0.0.1"},
	})
	allow := hosts(t, "*.rebind.test:"+p, "exact.rebind.test:"+p)
	allow = append(allow, policy.Host{Name: "registry.test", Port: mustAtoi(t, p), Preset: "@test"})
	var dialed []string
	var mu sync.Mutex
	r := start(t, &Proxy{
		Allow:  allow,
		Lookup: lookup,
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			mu.Lock()
			dialed = append(dialed, addr)
			mu.Unlock()
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
	})
	c := r.client(nil)
	for _, tt := range []struct {
		host string
		code int
		why  string
	}{
		{"a.rebind.test", 403, "resolves to 127.0.0.1, a loopback address"},
		{"b.rebind.test", 403, "resolves to 10.1.2.3, a private address"},
		{"c.rebind.test", 403, "resolves to 192.168.1.1, a private address"},
		{"d.rebind.test", 403, "resolves to 169.254.169.254, a link-local address"},
		{"e.rebind.test", 403, "resolves to 64:ff9b::a00:1, a private address"},
		{"registry.test", 403, "resolves to 127.0.0.1, a loopback address"},
		{"exact.rebind.test", 200, ""},
	} {
		code, body, err := get(t, c, "http://"+tt.host+":"+p+"/")
		if code != tt.code || !strings.Contains(body, tt.why) || (tt.code == 403) != strings.Contains(body, "--allow-net "+tt.host+":"+p) {
			t.Errorf("%s: got %d %q %v, want %d %q", tt.host, code, body, err, tt.code, tt.why)
		}
	}
	// CONNECT is checked the same way.
	if _, err := c.Get("https://a.rebind.test:" + p + "/"); err == nil || !strings.Contains(err.Error(), "a loopback address") {
		t.Errorf("CONNECT a.rebind.test: got %v, want refused", err)
	}
	if diff := cmp.Diff([]string{"127.0.0.1:" + p}, dialed); diff != "" {
		t.Errorf("dialled (-want +got):\n%s", diff)
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestUnreachable(t *testing.T) {
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	closedPort := port(t, "http://"+l.Addr().String())
	l.Close()
	r := start(t, &Proxy{
		Allow:  hosts(t, "127.0.0.1:"+closedPort, "nowhere.test"),
		Lookup: lookupTable(nil),
	})
	c := r.client(nil)
	for _, tt := range []struct{ url, want string }{
		{"http://127.0.0.1:" + closedPort + "/", "cannot connect to 127.0.0.1:" + closedPort + " from the host"},
		{"http://nowhere.test/", "cannot resolve nowhere.test from the host"},
	} {
		code, body, err := get(t, c, tt.url)
		if code != 502 || !strings.Contains(body, tt.want) {
			t.Errorf("%s: got %d %q %v, want 502 %q", tt.url, code, body, err, tt.want)
		}
	}
	if got, more := r.p.Refused(); len(got) != 0 || more != 0 {
		t.Errorf("refused %v: an unreachable host is not a refusal", got)
	}
}

// testCA is a certificate authority of the test's own, and a server
// certificate it signed for secure.test and 127.0.0.1.
func testCA(t *testing.T) (*x509.CertPool, tls.Certificate) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ca := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "nanosandbox test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "secure.test"},
		DNSNames:     []string{"secure.test"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(caCert)
	return roots, tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// body is what the download server sends: n bytes no compressor would
// shorten much, the same for every request.
func body(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i>>8)
	}
	return b
}

func TestConnectTLS(t *testing.T) {
	roots, cert := testCA(t)
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "secure %s", r.TLS.ServerName)
	}))
	up.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	up.Config.ErrorLog = log.New(io.Discard, "", 0) // the untrusting client's handshake
	up.StartTLS()
	defer up.Close()
	p := port(t, up.URL)
	r := start(t, &Proxy{
		Allow:  hosts(t, "secure.test:"+p),
		Lookup: lookupTable(map[string][]string{"secure.test": {"127.0.0.1"}}),
	})
	code, got, err := get(t, r.client(roots), "https://secure.test:"+p+"/")
	if err != nil || code != 200 || got != "secure secure.test" {
		t.Errorf("got %d %q %v", code, got, err)
	}
	// The tunnel carries TLS untouched: a client that does not trust the CA
	// fails on the certificate, not on the proxy.
	_, _, err = get(t, r.client(x509.NewCertPool()), "https://secure.test:"+p+"/")
	var unknown x509.UnknownAuthorityError
	if !errors.As(err, &unknown) {
		t.Errorf("got %v, want an unknown authority", err)
	}
}

// TestParallelDownloads: 20 downloads at once, half through CONNECT and
// TLS, half as plain HTTP, all complete and intact.
func TestParallelDownloads(t *testing.T) {
	const size = 1 << 20
	want := sha256.Sum256(body(size))
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(size))
		w.Write(body(size))
	})
	plain := httptest.NewServer(handler)
	defer plain.Close()
	roots, cert := testCA(t)
	secure := httptest.NewUnstartedServer(handler)
	secure.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	secure.Config.ErrorLog = log.New(io.Discard, "", 0)
	secure.StartTLS()
	defer secure.Close()
	r := start(t, &Proxy{Allow: hosts(t, "127.0.0.1:"+port(t, plain.URL), "127.0.0.1:"+port(t, secure.URL))})
	c := r.client(roots)
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		u := plain.URL
		if i%2 == 1 {
			u = secure.URL
		}
		wg.Go(func() {
			resp, err := c.Get(fmt.Sprintf("%s/%d", u, i))
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			h := sha256.New()
			n, err := io.Copy(h, resp.Body)
			if err != nil || n != size || [32]byte(h.Sum(nil)) != want {
				errs <- fmt.Errorf("%s/%d: %d bytes, %v, digest differs: %v", u, i, n, err, [32]byte(h.Sum(nil)) != want)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestStreaming: bytes pass as they come, both ways, and an end of stream
// is passed on: a tunnel to an echo server answers each line before the
// next is sent, and a response arrives in parts before its end.
func TestStreaming(t *testing.T) {
	echo, _ := net.Listen("tcp", "127.0.0.1:0")
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() {
				io.Copy(c, c)
				c.Close() // after the client's end of stream
			}()
		}
	}()
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "first\n")
		w.(http.Flusher).Flush()
		<-release
		io.WriteString(w, "second\n")
	}))
	defer up.Close()
	r := start(t, &Proxy{Allow: hosts(t, echo.Addr().String(), "127.0.0.1:"+port(t, up.URL))})

	c, err := net.Dial("tcp", r.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %[1]s\r\n\r\n", echo.Addr())
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	for i := range 3 {
		fmt.Fprintf(c, "line %d\n", i)
		if got, err := br.ReadString('\n'); got != fmt.Sprintf("line %d\n", i) {
			t.Fatalf("echo: got %q %v", got, err)
		}
	}
	c.(*net.TCPConn).CloseWrite()
	if rest, err := io.ReadAll(br); err != nil || len(rest) != 0 {
		t.Errorf("after end of stream: got %q %v, want EOF", rest, err)
	}

	resp, err = r.client(nil).Get(up.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rb := bufio.NewReader(resp.Body)
	if first, err := rb.ReadString('\n'); first != "first\n" {
		t.Fatalf("got %q %v before the end of the response", first, err)
	}
	close(release)
	if rest, err := io.ReadAll(rb); string(rest) != "second\n" {
		t.Errorf("got %q %v", rest, err)
	}
}

// TestEndOfCall: when the call ends, Serve returns at once, every
// connection through the proxy is closed at both ends, the listener is
// closed, and the process holds no more descriptors than before.
func TestEndOfCall(t *testing.T) {
	upstreamGone := make(chan struct{}, 2)
	hold, _ := net.Listen("tcp", "127.0.0.1:0")
	defer hold.Close()
	go func() {
		for {
			c, err := hold.Accept()
			if err != nil {
				return
			}
			go func() {
				io.Copy(io.Discard, c) // until the proxy closes its end
				c.Close()
				upstreamGone <- struct{}{}
			}()
		}
	}()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "forever\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		upstreamGone <- struct{}{}
	}))
	defer up.Close()
	before := openFDs(t)

	r := start(t, &Proxy{Allow: hosts(t, hold.Addr().String(), "127.0.0.1:"+port(t, up.URL))})
	tunnel, err := net.Dial("tcp", r.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer tunnel.Close()
	fmt.Fprintf(tunnel, "CONNECT %s HTTP/1.1\r\nHost: %[1]s\r\n\r\n", hold.Addr())
	tb := bufio.NewReader(tunnel)
	if resp, err := http.ReadResponse(tb, nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	c := r.client(nil)
	resp, err := c.Get(up.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rb := bufio.NewReader(resp.Body)
	rb.ReadString('\n')
	idle, err := net.Dial("tcp", r.addr) // connected, no request yet
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()

	began := time.Now()
	r.end(t)
	if d := time.Since(began); d > time.Second {
		t.Errorf("Serve took %s to return", d)
	}
	for name, rd := range map[string]io.Reader{"tunnel": tb, "download": rb, "idle connection": idle} {
		if conn, ok := rd.(net.Conn); ok {
			conn.SetReadDeadline(time.Now().Add(2 * time.Second))
		}
		tunnel.SetReadDeadline(time.Now().Add(2 * time.Second))
		if _, err := io.ReadAll(rd); err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("%s: still open after the call ended", name)
		}
	}
	for range 2 {
		select {
		case <-upstreamGone:
		case <-time.After(2 * time.Second):
			t.Fatal("an upstream connection is still open after the call ended")
		}
	}
	if c, err := net.Dial("tcp", r.addr); err == nil {
		c.Close()
		t.Error("the listener still accepts after the call ended")
	}
	tunnel.Close()
	resp.Body.Close()
	idle.Close()
	c.CloseIdleConnections()
	if before < 0 {
		return
	}
	deadline := time.Now().Add(2 * time.Second)
	for openFDs(t) > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if after := openFDs(t); after > before {
		t.Errorf("%d descriptors open after the call, %d before", after, before)
	}
}

// openFDs counts this process's open descriptors, or returns -1 where
// /proc does not list them.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}

func TestConnectionCap(t *testing.T) {
	l := &limitListener{Listener: nil, slots: make(chan struct{}, 2)}
	inner, _ := net.Listen("tcp", "127.0.0.1:0")
	defer inner.Close()
	l.Listener = inner
	var conns []net.Conn
	for range 3 {
		c, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	for range 2 {
		c, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	third := make(chan net.Conn)
	go func() {
		c, _ := l.Accept()
		third <- c
	}()
	select {
	case <-third:
		t.Fatal("a third connection was accepted while two were open")
	case <-time.After(50 * time.Millisecond):
	}
	conns[0].Close()
	conns[0].Close() // a second Close frees no second slot
	select {
	case c := <-third:
		c.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("closing a connection did not free its slot")
	}
	if len(l.slots) != 1 {
		t.Errorf("%d slots taken, want 1", len(l.slots))
	}
}
