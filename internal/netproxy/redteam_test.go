package netproxy

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
)

// redteam is a proxy allowing one loopback upstream ("listed"), with a
// second loopback upstream ("unlisted") that must never be reached, and a
// record of every address the proxy dialled.
type redteam struct {
	r                *running
	listed, unlisted string // host:port
	lport, uport     string

	mu     sync.Mutex
	dialed []string
	seen   []string // "METHOD host path" as the listed upstream saw them
}

func newRedteam(t *testing.T, listedHandler http.HandlerFunc) *redteam {
	t.Helper()
	rt := &redteam{}
	if listedHandler == nil {
		listedHandler = func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "LISTED") }
	}
	listed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rt.mu.Lock()
		rt.seen = append(rt.seen, r.Method+" "+r.Host+" "+r.URL.Path)
		rt.mu.Unlock()
		listedHandler(w, r)
	}))
	t.Cleanup(listed.Close)
	unlisted := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the unlisted upstream was reached: %s %s Host=%s", r.Method, r.URL, r.Host)
		io.WriteString(w, "UNLISTED")
	}))
	t.Cleanup(unlisted.Close)
	rt.listed = strings.TrimPrefix(listed.URL, "http://")
	rt.unlisted = strings.TrimPrefix(unlisted.URL, "http://")
	rt.lport, rt.uport = port(t, listed.URL), port(t, unlisted.URL)
	rt.r = start(t, &Proxy{
		Allow: hosts(t, "127.0.0.1:"+rt.lport),
		Lookup: func(_ context.Context, host string) ([]netip.Addr, error) {
			t.Errorf("looked up %q: only IP literals are listed", host)
			return nil, fmt.Errorf("no")
		},
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			rt.mu.Lock()
			rt.dialed = append(rt.dialed, addr)
			rt.mu.Unlock()
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
	})
	return rt
}

// raw sends req on a fresh connection to the proxy and returns everything
// it answers until it closes the connection or 3s pass.
func (rt *redteam) raw(t *testing.T, req string) string {
	t.Helper()
	c, err := net.Dial("tcp", rt.r.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(3 * time.Second))
	io.WriteString(c, req)
	var out bytes.Buffer
	io.Copy(&out, c)
	return out.String()
}

// checkDials fails unless every dial went to the listed upstream.
func (rt *redteam) checkDials(t *testing.T) {
	t.Helper()
	rt.mu.Lock()
	defer rt.mu.Unlock()
	for _, d := range rt.dialed {
		if d != rt.listed {
			t.Errorf("dialled %s; only %s is listed", d, rt.listed)
		}
	}
}

// TestRedteamSpellings: no spelling of a target (CONNECT authority or
// absolute URL, userinfo, percent-encoding, IPv4-mapped IPv6, numeric
// forms, zone ids, a Host header naming another host) reaches a port that
// is not listed, while the listed one stays reachable under its aliases
// (where a tunnel to it opens, the plain HTTP request in it is refused).
func TestRedteamSpellings(t *testing.T) {
	rt := newRedteam(t, nil)
	L, U, lp, up := rt.listed, rt.unlisted, rt.lport, rt.uport
	inner := "GET / HTTP/1.1\r\nHost: " + U + "\r\nConnection: close\r\n\r\n"
	connect := func(target string) string {
		return "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n" + inner
	}
	get := func(url, host string) string {
		return "GET " + url + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n"
	}
	for _, tt := range []struct {
		name, req string
		want      string // the status line's start
		listed    bool   // the listed upstream answers
	}{
		{"CONNECT listed", connect(L), "HTTP/1.1 200", false},
		{"CONNECT listed, leading zero port", connect("127.0.0.1:0" + lp), "HTTP/1.1 200", false},
		{"CONNECT listed as mapped IPv6", connect("[::ffff:7f00:1]:" + lp), "HTTP/1.1 200", false},
		{"CONNECT unlisted port", connect(U), "HTTP/1.1 403", false},
		{"CONNECT mapped IPv6", connect("[::ffff:127.0.0.1]:" + up), "HTTP/1.1 403", false},
		{"CONNECT [::1]", connect("[::1]:" + up), "HTTP/1.1 403", false},
		{"CONNECT 0.0.0.0", connect("0.0.0.0:" + up), "HTTP/1.1 403", false},
		{"CONNECT [::]", connect("[::]:" + up), "HTTP/1.1 403", false},
		{"CONNECT localhost.", connect("localhost.:" + up), "HTTP/1.1 403", false},
		{"CONNECT NAT64 loopback", connect("[64:ff9b::7f00:1]:" + up), "HTTP/1.1 403", false},
		{"CONNECT 6to4 loopback", connect("[2002:7f00:1::]:" + up), "HTTP/1.1 403", false},
		{"CONNECT 127.1", connect("127.1:" + up), "HTTP/1.1 400", false},
		{"CONNECT decimal", connect("2130706433:" + up), "HTTP/1.1 400", false},
		{"CONNECT octal", connect("0177.0.0.1:" + up), "HTTP/1.1 400", false},
		{"CONNECT trailing-dot address", connect("127.0.0.1.:" + up), "HTTP/1.1 400", false},
		{"CONNECT two ports", connect(L + ":" + up), "HTTP/1.1 400", false},
		{"CONNECT userinfo", connect(L + "@" + U), "HTTP/1.1 400", false},
		{"CONNECT zone", connect("[fe80::1%25lo]:" + up), "HTTP/1.1 400", false},
		{"CONNECT URL", connect("http://" + U + "/"), "HTTP/1.1 400", false},
		{"GET listed, Host unlisted", get("http://"+L+"/", U), "HTTP/1.1 200", true},
		{"GET unlisted, Host listed", get("http://"+U+"/", L), "HTTP/1.1 403", false},
		{"GET userinfo listed@unlisted", get("http://"+L+"@"+U+"/", L), "HTTP/1.1 403", false},
		{"GET userinfo unlisted@listed", get("http://"+U+"@"+L+"/", L), "HTTP/1.1 200", true},
		{"GET fragment @", get("http://"+L+"#@"+U+"/", L), "HTTP/1.1 400", false},
		{"GET backslash @", get("http://"+U+"\\@"+L+"/", L), "HTTP/1.1 400", false},
		{"GET percent-encoded colon", get("http://127.0.0.1%3a"+up+"/", L), "HTTP/1.1 400", false},
		{"GET mapped IPv6", get("http://[::ffff:127.0.0.1]:"+up+"/", L), "HTTP/1.1 403", false},
		{"GET upper-case scheme", get("HTTP://"+L+"/", L), "HTTP/1.1 200", true},
		{"GET opaque http:host", get("http:"+U+"/", L), "HTTP/1.1 400", false},
		{"GET http:/host", get("http:/"+U+"/", L), "HTTP/1.1 400", false},
		{"HTTP/1.0 without Host", "GET http://" + U + "/ HTTP/1.0\r\n\r\n", "HTTP/1.1 403", false},
		{"origin-form, Host unlisted", "GET / HTTP/1.1\r\nHost: " + U + "\r\nConnection: close\r\n\r\n", "HTTP/1.1 400", false},
		{"bare LF", "GET http://" + U + "/ HTTP/1.1\nHost: " + L + "\n\n", "HTTP/1.1 403", false},
		{"h2 prior knowledge", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "HTTP/1.1 400", false},
		{"h2c upgrade to unlisted", "GET http://" + U + "/ HTTP/1.1\r\nHost: " + U + "\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n", "HTTP/1.1 403", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := rt.raw(t, tt.req)
			if !strings.HasPrefix(out, tt.want) {
				t.Errorf("got %.120q, want %q", out, tt.want)
			}
			if strings.Contains(out, "UNLISTED") {
				t.Errorf("the unlisted upstream answered: %.200q", out)
			}
			if strings.HasPrefix(tt.req, "CONNECT") && strings.HasPrefix(out, "HTTP/1.1 200") && !strings.Contains(out, "HTTP/1.1 403 Forbidden\r\n") {
				t.Errorf("the request in the tunnel was not refused: %.200q", out)
			}
			if tt.listed != strings.Contains(out, "LISTED") {
				t.Errorf("listed upstream answered: %v, want %v: %.200q", !tt.listed, tt.listed, out)
			}
		})
	}
	rt.checkDials(t)
}

// TestRedteamOneConnection: requests that share a client connection with
// an allowed one (pipelined, after an upgrade, smuggled in a body or by
// conflicting framing) are each checked on their own, and the upstream
// connection opened for the listed host carries only requests for it.
func TestRedteamOneConnection(t *testing.T) {
	rt := newRedteam(t, nil)
	L, U := rt.listed, rt.unlisted
	toL := "GET http://" + L + "/a HTTP/1.1\r\nHost: " + L + "\r\n\r\n"
	toU := "GET http://" + U + "/b HTTP/1.1\r\nHost: " + L + "\r\n\r\n"
	smuggled := "GET /smuggled HTTP/1.1\r\nHost: " + U + "\r\n\r\n"
	for _, tt := range []struct {
		name, req string
		want      []string // the status codes, in order
	}{
		{"pipelined", toL + toL + toU, []string{"200", "200", "403"}},
		{"CL and TE", "POST http://" + L + "/c HTTP/1.1\r\nHost: " + L + "\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + toU, []string{"200", "403"}},
		{"obs-fold TE", "POST http://" + L + "/c HTTP/1.1\r\nHost: " + L + "\r\nTransfer-Encoding:\r\n chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n" + toU, []string{"200", "403"}},
		{"two Content-Lengths", "POST http://" + L + "/c HTTP/1.1\r\nHost: " + L + "\r\nContent-Length: 0\r\nContent-Length: " + fmt.Sprint(len(smuggled)) + "\r\n\r\n" + smuggled, []string{"400"}},
		{"request in a body", "POST http://" + L + "/d HTTP/1.1\r\nHost: " + L + "\r\nContent-Length: " + fmt.Sprint(len(smuggled)) + "\r\n\r\n" + smuggled + toU, []string{"200", "403"}},
		{"websocket upgrade refused upstream, then unlisted", "GET http://" + L + "/e HTTP/1.1\r\nHost: " + L + "\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n" + toU, []string{"200", "403"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := rt.raw(t, tt.req)
			var got []string
			for _, line := range strings.Split(out, "\n") {
				if i := strings.Index(line, "HTTP/1.1 "); i >= 0 && len(line) >= i+12 {
					got = append(got, line[i+9:i+12])
				}
			}
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("got statuses %v, want %v: %.300q", got, tt.want, out)
			}
		})
	}
	rt.checkDials(t)
	rt.mu.Lock()
	defer rt.mu.Unlock()
	for _, s := range rt.seen {
		if !strings.HasSuffix(s, " "+L+" /a") && !strings.HasSuffix(s, " "+L+" /c") && !strings.HasSuffix(s, " "+L+" /d") && !strings.HasSuffix(s, " "+L+" /e") {
			t.Errorf("the listed upstream saw %q", s)
		}
	}
}

// TestRedteamRedirect: the proxy passes a listed host's redirect to an
// unlisted one back to the command rather than following it.
func TestRedteamRedirect(t *testing.T) {
	var rt *redteam
	rt = newRedteam(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://"+rt.unlisted+"/", http.StatusFound)
	})
	out := rt.raw(t, "GET http://"+rt.listed+"/ HTTP/1.1\r\nHost: "+rt.listed+"\r\nConnection: close\r\n\r\n")
	if !strings.HasPrefix(out, "HTTP/1.1 302") || !strings.Contains(out, "Location: http://"+rt.unlisted+"/") {
		t.Errorf("got %.200q, want the 302 passed on", out)
	}
	rt.checkDials(t)
}
