package netproxy

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestHeaderFlood: a request whose headers never end is cut off at
// maxHeaderLines (or maxHeaderBytes), and 64 such connections leave the proxy's heap about as
// it was (with Go's default of 1 MiB each held some 10 MiB: 2.7 GB for
// 256 of them, outside every limit of the command's).
func TestHeaderFlood(t *testing.T) {
	r := start(t, &Proxy{Allow: hosts(t, "example.com")})
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	line := strings.Repeat("X-a: b\r\n", 8<<10) // 64 KiB of tiny lines
	var conns []net.Conn
	for range 64 {
		c, err := net.Dial("tcp", r.addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		fmt.Fprintf(c, "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n")
		for range 16 { // 1 MiB in all, or until the proxy answers
			if _, err := c.Write([]byte(line)); err != nil {
				break
			}
		}
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("got %v %v, want 431", resp, err)
		}
		c.Close()
	}
	if grew := int64(after.HeapInuse) - int64(before.HeapInuse); grew > 64<<20 {
		t.Errorf("the heap grew by %d MiB for 64 connections", grew>>20)
	}
}

// TestRefusalsBounded: a flood of distinct refused destinations keeps at
// most maxRefused of them, and counts the rest for the note.
func TestRefusalsBounded(t *testing.T) {
	p := &Proxy{}
	const n = 10 * maxRefused
	for i := range n {
		p.refuse(fmt.Sprintf("h%d.test", i), 443, "not in --allow-net")
	}
	p.refuse("h0.test", 443, "not in --allow-net") // a repeat of one kept
	got, more := p.Refused()
	if len(got) != maxRefused || more != n-maxRefused {
		t.Errorf("kept %d and counted %d more, want %d and %d", len(got), more, maxRefused, n-maxRefused)
	}
	if note := Note(got, more); !strings.Contains(note, fmt.Sprintf("and %d more", n-10)) {
		t.Errorf("note %q does not count the rest", note)
	}
}

// TestOwnNetworkRefused: a name a pattern admits that resolves to one of
// this machine's own addresses, or into a network one of its interfaces
// is on, is refused, whatever kind the address is (a public one on an
// interface reaches services bound to every address; a neighbour on the
// LAN's global IPv6 /64 is no firewall away); a name listed exactly is
// not, and an address outside those networks is dialled.
func TestOwnNetworkRefused(t *testing.T) {
	var mu sync.Mutex
	var dialed []string
	r := start(t, &Proxy{
		Allow: hosts(t, "*.own.test", "exact.own.test"),
		Lookup: lookupTable(map[string][]string{
			"self.own.test":  {"93.184.0.10"},
			"gw.own.test":    {"93.184.0.1"},
			"nas.own.test":   {"2a02:6b8:1:2::99"},
			"far.own.test":   {"93.184.1.1"},
			"exact.own.test": {"93.184.0.1"},
		}),
		Dial: func(_ context.Context, _, addr string) (net.Conn, error) {
			mu.Lock()
			dialed = append(dialed, addr)
			mu.Unlock()
			return nil, fmt.Errorf("no")
		},
		interfaces: func() []ifaceNet {
			return []ifaceNet{
				{"lo", netip.MustParsePrefix("127.0.0.1/8")},
				{"eth0", netip.MustParsePrefix("93.184.0.10/24")},
				{"eth0", netip.MustParsePrefix("2a02:6b8:1:2::10/64")},
			}
		},
	})
	for _, tt := range []struct {
		host string
		code int
		want string
	}{
		{"self.own.test", 403, "resolves to 93.184.0.10, an address of this machine's own"},
		{"gw.own.test", 403, "resolves to 93.184.0.1, on this machine's own network (eth0 93.184.0.0/24)"},
		{"nas.own.test", 403, "resolves to 2a02:6b8:1:2::99, on this machine's own network (eth0 2a02:6b8:1:2::/64)"},
		{"far.own.test", 502, "cannot connect to far.own.test:80"},
		{"exact.own.test", 502, "cannot connect to exact.own.test:80"},
	} {
		code, body, err := get(t, r.client(nil), "http://"+tt.host+"/")
		if code != tt.code || !strings.Contains(body, tt.want) {
			t.Errorf("%s: got %d %q %v, want %d %q", tt.host, code, body, err, tt.code, tt.want)
		}
	}
	if want := []string{"93.184.1.1:80", "93.184.0.1:80"}; strings.Join(dialed, " ") != strings.Join(want, " ") {
		t.Errorf("dialled %v, want %v", dialed, want)
	}
}

// TestInterfaceNets: this machine's interfaces are listed with their
// networks, not their addresses alone: loopback's is 127.0.0.1/8.
func TestInterfaceNets(t *testing.T) {
	nets := interfaceNets()
	for _, n := range nets {
		if n.addr == netip.MustParsePrefix("127.0.0.1/8") && n.iface != "" {
			return
		}
	}
	t.Errorf("no 127.0.0.1/8 in %v", nets)
}

// TestSpecialRanges: ranges that never lead to the internet are not
// public.
func TestSpecialRanges(t *testing.T) {
	for _, a := range []string{"198.18.0.1", "198.19.255.254", "192.0.0.170", "::7f00:1", "::a00:1",
		"192.0.2.1", "198.51.100.7", "203.0.113.80", "2001:db8::1", "3fff::1", "100::1", "2001:2::1"} {
		if internal(netip.MustParseAddr(a)) == "" {
			t.Errorf("%s is taken for a public address", a)
		}
	}
	for _, a := range []string{"198.20.0.1", "192.0.1.1", "8.8.8.8", "2606:4700::1111", "203.0.114.1", "2001:db9::1", "100:0:0:1::1", "2001:3::1"} {
		if k := internal(netip.MustParseAddr(a)); k != "" {
			t.Errorf("%s is taken for %s", a, k)
		}
	}
}
