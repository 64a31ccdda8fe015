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

// TestOwnAddressRefused: a name a pattern admits that resolves to one of
// this machine's own addresses is refused, whatever kind the address is
// (a public one on an interface reaches services bound to every address).
func TestOwnAddressRefused(t *testing.T) {
	var own netip.Addr
	for _, a := range ownAddrs() {
		if internal(a) == "" {
			own = a
			break
		}
	}
	if !own.IsValid() {
		t.Skip("needs an interface with a public address (this machine has only loopback or private ones)")
	}
	dialed := false
	r := start(t, &Proxy{
		Allow:  hosts(t, "*.own.test"),
		Lookup: lookupTable(map[string][]string{"a.own.test": {own.String()}}),
		Dial: func(context.Context, string, string) (net.Conn, error) {
			dialed = true
			return nil, fmt.Errorf("no")
		},
	})
	code, body, err := get(t, r.client(nil), "http://a.own.test/")
	if code != 403 || !strings.Contains(body, "resolves to "+own.String()+", an address of this machine's own") {
		t.Errorf("got %d %q %v, want refused as this machine's own", code, body, err)
	}
	if dialed {
		t.Error("this machine's own address was dialled")
	}
}

// TestSpecialRanges: ranges that never lead to the internet are not
// public.
func TestSpecialRanges(t *testing.T) {
	for _, a := range []string{"198.18.0.1", "198.19.255.254", "192.0.0.170", "::7f00:1", "::a00:1"} {
		if internal(netip.MustParseAddr(a)) == "" {
			t.Errorf("%s is taken for a public address", a)
		}
	}
	for _, a := range []string{"198.20.0.1", "192.0.1.1", "8.8.8.8", "2606:4700::1111"} {
		if k := internal(netip.MustParseAddr(a)); k != "" {
			t.Errorf("%s is taken for %s", a, k)
		}
	}
}
