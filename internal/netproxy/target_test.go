package netproxy

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
)

func TestSplitTarget(t *testing.T) {
	for _, tt := range []struct {
		in          string
		defaultPort int
		host        string
		port        int
		err         string
	}{
		{"example.com:443", 0, "example.com", 443, ""},
		{"Example.COM.:80", 0, "example.com", 80, ""},
		{"example.com", 80, "example.com", 80, ""},
		{"example.com", 0, "", 0, "no port"},
		{"[::1]:8080", 0, "::1", 8080, ""},
		{"[::1]", 80, "::1", 80, ""},
		{"[::ffff:127.0.0.1]:80", 0, "127.0.0.1", 80, ""},
		{"::1:80", 0, "", 0, "in brackets"},
		{"[example.com]:80", 0, "", 0, "brackets"},
		{"[127.0.0.1]:80", 0, "", 0, "brackets"},
		{"example.com:", 0, "", 0, "not a port"},
		{"example.com:0", 0, "", 0, "not a port"},
		{"example.com:65536", 0, "", 0, "not a port"},
		{"example.com:+80", 0, "", 0, "not a port"},
		{"example.com:-1", 0, "", 0, "not a port"},
		{"127.1:80", 0, "", 0, "dotted-quad"},
		{"0x7f000001:80", 0, "", 0, "dotted-quad"},
		{"a b:80", 0, "", 0, "not allowed"},
		{":80", 0, "", 0, "empty"},
		{"[fe80::1%25eth0]:80", 0, "", 0, "zone"},
	} {
		host, port, err := splitTarget(tt.in, tt.defaultPort)
		if host != tt.host || port != tt.port || (err == nil) != (tt.err == "") || err != nil && !strings.Contains(err.Error(), tt.err) {
			t.Errorf("splitTarget(%q, %d): got %q %d %v, want %q %d %q", tt.in, tt.defaultPort, host, port, err, tt.host, tt.port, tt.err)
		}
	}
}

// FuzzSplitTarget: no panic; what it accepts is a host as policy keeps
// them and a port in range, and reads back the same.
func FuzzSplitTarget(f *testing.F) {
	for _, s := range []string{"example.com:443", "[::1]:80", "[::1]", "::1", "a:b:c", "127.1:80", "[]:1", "[:80", "x:99999", "EXAMPLE.com.:1"} {
		f.Add(s, 0)
		f.Add(s, 80)
	}
	f.Fuzz(func(t *testing.T, in string, defaultPort int) {
		if defaultPort != 0 {
			defaultPort = 80
		}
		host, port, err := splitTarget(in, defaultPort)
		if err != nil {
			return
		}
		if n, err := policy.NormalHost(host); err != nil || n != host {
			t.Fatalf("%q: host %q is not normal (%q, %v)", in, host, n, err)
		}
		if port < 1 || port > 65535 {
			t.Fatalf("%q: port %d", in, port)
		}
		h2, p2, err := splitTarget(joinHostPort(host, port), 0)
		if err != nil || h2 != host || p2 != port {
			t.Fatalf("%q: %q %d reads back as %q %d %v", in, host, port, h2, p2, err)
		}
	})
}

func TestInternal(t *testing.T) {
	for _, tt := range []struct{ addr, want string }{
		{"127.0.0.1", "loopback"},
		{"127.255.0.9", "loopback"},
		{"::1", "loopback"},
		{"::ffff:127.0.0.1", "loopback"},
		{"10.0.0.1", "private"},
		{"172.16.5.4", "private"},
		{"192.168.0.1", "private"},
		{"fd00::1", "private"},
		{"fec0::1", "private"},
		{"169.254.169.254", "link-local"},
		{"fe80::1", "link-local"},
		{"0.0.0.0", "non-public"},
		{"0.1.2.3", "non-public"},
		{"::", "non-public"},
		{"100.100.100.100", "non-public"},
		{"224.0.0.1", "link-local"},
		{"239.1.1.1", "non-public"},
		{"255.255.255.255", "non-public"},
		{"64:ff9b::7f00:1", "loopback"},
		{"64:ff9b::808:808", ""},
		{"64:ff9b:1::1", "private"},
		{"2002:c0a8:101::1", "private"},
		{"2002:808:808::1", ""},
		{"8.8.8.8", ""},
		{"93.184.215.14", ""},
		{"2001:4860:4860::8888", ""},
		{"172.32.0.1", ""},
	} {
		if got := internal(netip.MustParseAddr(tt.addr)); got != tt.want {
			t.Errorf("internal(%s): got %q, want %q", tt.addr, got, tt.want)
		}
	}
}

func TestNote(t *testing.T) {
	if got := Note(nil, 0); got != "" {
		t.Errorf("no refusal: got %q", got)
	}
	got := Note([]Refusal{
		{Dest: "example.com:443", Why: "not in --allow-net", Allow: "example.com"},
		{Dest: "example.com:80", Why: "not in --allow-net", Allow: "example.com"},
		{Dest: "db.example.com:5432", Why: "resolves to 10.0.0.1, a private address; only a host listed by its exact name may", Allow: "db.example.com:5432"},
	}, 0)
	want := "network: the sandbox refused example.com:443 (not in --allow-net), example.com:80 (not in --allow-net), db.example.com:5432 (resolves to 10.0.0.1, a private address; only a host listed by its exact name may); " +
		"only what the server was started with --allow-net can be reached; to allow these, ask the user to restart it with --allow-net example.com --allow-net db.example.com:5432"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	tunnel := Refusal{Dest: "example.com:80", Why: "plain HTTP in a CONNECT tunnel; an http:// URL's request goes to the proxy without CONNECT"}
	if got, want := Note([]Refusal{tunnel}, 0), "network: the sandbox refused example.com:80 (plain HTTP in a CONNECT tunnel; an http:// URL's request goes to the proxy without CONNECT)"; got != want {
		t.Errorf("no flag would allow it: got  %q\nwant %q", got, want)
	}
	if got := Note([]Refusal{tunnel, {Dest: "a.test:443", Why: "not in --allow-net", Allow: "a.test"}}, 0); !strings.HasSuffix(got, "restart it with --allow-net a.test") {
		t.Errorf("one flag would allow one: got %q", got)
	}
	var many []Refusal
	for i := range 15 {
		many = append(many, Refusal{Dest: "h" + string(rune('a'+i)) + ".test:443", Why: "not in --allow-net", Allow: "h.test"})
	}
	if got := Note(many, 0); !strings.Contains(got, "hj.test:443 (not in --allow-net), and 5 more;") {
		t.Errorf("got %q, want ten named and 5 more", got)
	}
	if got := Note(many, 1000); !strings.Contains(got, "hj.test:443 (not in --allow-net), and 1005 more;") {
		t.Errorf("got %q, want ten named and 1005 more", got)
	}
}

// FuzzRequest sends arbitrary bytes to a proxy that allows one host: no
// request, however it is written, makes the proxy dial anything else.
func FuzzRequest(f *testing.F) {
	for _, s := range []string{
		"CONNECT allowed.test:80 HTTP/1.1\r\nHost: allowed.test:80\r\n\r\n",
		"CONNECT other.test:80 HTTP/1.1\r\n\r\n",
		"GET http://allowed.test/ HTTP/1.1\r\nHost: other.test\r\n\r\n",
		"GET http://other.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n",
		"GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\nGET http://other.test:80/ HTTP/1.1\r\nHost: other.test\r\n\r\n",
		"GET http://user@allowed.test@other.test/ HTTP/1.1\r\n\r\n",
		"GET http://[::1]:80/ HTTP/1.0\r\n\r\n",
		"CONNECT 127.0.0.1:80 HTTP/1.1\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	var mu sync.Mutex
	var bad []string
	p := &Proxy{
		Allow: []policy.Host{{Name: "allowed.test", Port: 80}},
		Lookup: func(_ context.Context, host string) ([]netip.Addr, error) {
			if host == "allowed.test" {
				return []netip.Addr{netip.MustParseAddr("93.184.215.14")}, nil
			}
			return []netip.Addr{netip.MustParseAddr("93.184.215.66")}, nil
		},
		Dial: func(_ context.Context, _, addr string) (net.Conn, error) {
			if addr != "93.184.215.14:80" {
				mu.Lock()
				bad = append(bad, addr)
				mu.Unlock()
			}
			return nil, errors.New("the fuzz test dials nothing")
		},
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go p.Serve(ctx, l)
	f.Fuzz(func(t *testing.T, req []byte) {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(2 * time.Second))
		c.Write(req)
		c.(*net.TCPConn).CloseWrite()
		io.Copy(io.Discard, c)
		mu.Lock()
		defer mu.Unlock()
		if len(bad) > 0 {
			t.Fatalf("%q made the proxy dial %v", req, bad)
		}
	})
}

// A refused host that a preset lists, on 443, is to be allowed with its
// preset: git clone from github.com goes on to codeload.github.com.
func TestRefusalNamesPreset(t *testing.T) {
	p := &Proxy{}
	for _, tt := range []struct {
		host string
		port int
		want string
	}{
		{"github.com", 443, "@github"},
		{"Registry.NPMjs.org.", 443, "@npm"},
		{"github.com", 80, "github.com"},
		{"example.com", 443, "example.com"},
		{"pypi.org", 8443, "pypi.org:8443"},
	} {
		p.refuse(tt.host, tt.port, "not in --allow-net")
		got := ""
		refused, _ := p.Refused()
		for _, r := range refused {
			if r.Dest == joinHostPort(tt.host, tt.port) {
				got = r.Allow
			}
		}
		if got != tt.want {
			t.Errorf("%s:%d: got --allow-net %q, want %q", tt.host, tt.port, got, tt.want)
		}
	}
}
