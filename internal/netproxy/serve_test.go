package netproxy

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestForwardBodies: a request's body reaches the destination whole, sent
// with a length, in chunks, or after Expect: 100-continue, and the
// client's connection carries the next request after it.
func TestForwardBodies(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := sha256.New()
		n, _ := io.Copy(h, r.Body)
		fmt.Fprintf(w, "%d %x ua=%q expect=%q", n, h.Sum(nil), r.Header.Get("User-Agent"), r.Header.Get("Expect"))
	}))
	defer up.Close()
	r := start(t, &Proxy{Allow: hosts(t, "127.0.0.1:"+port(t, up.URL))})
	payload := body(1 << 20)
	want := fmt.Sprintf("%d %x ua=%q expect=%q", len(payload), sha256.Sum256(payload), "", "")

	c, err := net.Dial("tcp", r.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	br := bufio.NewReader(c)
	for _, tt := range []struct {
		name   string
		header string
		chunk  bool
	}{
		{"with a length", fmt.Sprintf("Content-Length: %d\r\n", len(payload)), false},
		{"chunked", "Transfer-Encoding: chunked\r\n", true},
		{"after 100-continue", fmt.Sprintf("Content-Length: %d\r\nExpect: 100-continue\r\n", len(payload)), false},
	} {
		fmt.Fprintf(c, "POST %s/ HTTP/1.1\r\nHost: x\r\n%s\r\n", up.URL, tt.header)
		if strings.Contains(tt.header, "Expect") {
			line, err := br.ReadString('\n')
			if line != "HTTP/1.1 100 Continue\r\n" {
				t.Fatalf("%s: got %q %v before the body, want 100 Continue", tt.name, line, err)
			}
			br.ReadString('\n')
		}
		if tt.chunk {
			for i := 0; i < len(payload); i += 100000 {
				part := payload[i:min(i+100000, len(payload))]
				fmt.Fprintf(c, "%x\r\n%s\r\n", len(part), part)
			}
			io.WriteString(c, "0\r\n\r\n")
		} else {
			c.Write(payload)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		got, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || string(got) != want || resp.Close {
			t.Errorf("%s: got %d %q (close %v), want 200 %q on a connection kept", tt.name, resp.StatusCode, got, resp.Close, want)
		}
	}
}

// TestForwardToHTTP10: an HTTP/1.0 client gets a chunked answer whole, to
// the connection's close, never chunked.
func TestForwardToHTTP10(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "part one, ")
		w.(http.Flusher).Flush()
		io.WriteString(w, "part two")
	}))
	defer up.Close()
	r := start(t, &Proxy{Allow: hosts(t, "127.0.0.1:"+port(t, up.URL))})
	c, err := net.Dial("tcp", r.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "GET %s/ HTTP/1.0\r\n\r\n", up.URL)
	out, _ := io.ReadAll(c)
	head, rest, _ := bytes.Cut(out, []byte("\r\n\r\n"))
	if !bytes.HasPrefix(head, []byte("HTTP/1.1 200")) || bytes.Contains(bytes.ToLower(head), []byte("chunked")) || string(rest) != "part one, part two" {
		t.Errorf("got %q", out)
	}
}

// TestForwardUpgrade: a request to switch protocols that the destination
// accepts becomes a tunnel to it, both ways, with what either side sent
// beyond the switch.
func TestForwardUpgrade(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "echo" {
			http.Error(w, "no upgrade", 400)
			return
		}
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\nhello\n")
		brw.Flush()
		for {
			line, err := brw.ReadString('\n')
			if err != nil {
				return
			}
			brw.WriteString("echo " + line)
			brw.Flush()
		}
	}))
	defer up.Close()
	r := start(t, &Proxy{Allow: hosts(t, "127.0.0.1:"+port(t, up.URL))})
	c, err := net.Dial("tcp", r.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "GET %s/ HTTP/1.1\r\nHost: x\r\nConnection: keep-alive, Upgrade\r\nUpgrade: echo\r\n\r\n", up.URL)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 101 || resp.Header.Get("Upgrade") != "echo" {
		t.Fatalf("got %v %v, want 101 to echo", resp, err)
	}
	if line, err := br.ReadString('\n'); line != "hello\n" {
		t.Fatalf("after the switch: got %q %v", line, err)
	}
	io.WriteString(c, "ping\n")
	if line, err := br.ReadString('\n'); line != "echo ping\n" {
		t.Errorf("got %q %v, want the echo", line, err)
	}
}

// TestBadHeaders: what net/http's server refused, the proxy refuses too,
// before anything is dialled.
func TestBadHeaders(t *testing.T) {
	rt := newRedteam(t, nil)
	L := rt.listed
	for _, tt := range []struct{ name, req string }{
		{"two Host headers", "GET http://" + L + "/ HTTP/1.1\r\nHost: " + L + "\r\nHost: " + rt.unlisted + "\r\n\r\n"},
		{"a control character", "GET http://" + L + "/ HTTP/1.1\r\nHost: " + L + "\r\nX-A: a\x01b\r\n\r\n"},
		{"a CONNECT target with a path", "CONNECT " + L + "/x HTTP/1.1\r\nHost: " + L + "\r\n\r\n"},
		{"HTTP/2", "GET http://" + L + "/ HTTP/2.0\r\nHost: " + L + "\r\n\r\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if out := rt.raw(t, tt.req); !strings.HasPrefix(out, "HTTP/1.1 400") {
				t.Errorf("got %.200q, want 400", out)
			}
		})
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if len(rt.dialed) != 0 {
		t.Errorf("dialled %v", rt.dialed)
	}
}

// TestAnswerBounds: a destination that sends headers without end, a
// header block over 64 KiB, one of over 256 lines, or interim answers
// without end, gets the client a 502, not the server's memory.
func TestAnswerBounds(t *testing.T) {
	lines := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "X-%x: b\r\n", i)
		}
		return b.String()
	}
	for _, tt := range []struct{ name, first, repeat, want string }{
		{"endless headers", "HTTP/1.1 200 OK\r\n", "X-A: b\r\n", "over 256 header lines"},
		{"long header lines", "HTTP/1.1 200 OK\r\n", "X-A: " + strings.Repeat("b", 1000) + "\r\n", "headers over 64 KiB"},
		{"257 header lines", "HTTP/1.1 200 OK\r\n" + lines(257) + "Content-Length: 0\r\n\r\n", "", "over 256 header lines"},
		{"an interim answer of 257 lines", "HTTP/1.1 103 Early Hints\r\n" + lines(257) + "\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", "", "over 256 header lines"},
		{"endless interim answers", "", "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n", "too many interim answers"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			addr := answering(t, tt.first, tt.repeat)
			r := start(t, &Proxy{Allow: hosts(t, addr)})
			code, got, err := get(t, r.client(nil), "http://"+addr+"/")
			if code != 502 || !strings.Contains(got, tt.want) {
				t.Errorf("got %d %q %v, want 502 %q", code, got, err, tt.want)
			}
		})
	}
}

// TestAnswerWithinBounds: 256 header lines pass, in the answer and in each
// of its interim answers, and the lines counted are the header block's,
// not those of a body read with it.
func TestAnswerWithinBounds(t *testing.T) {
	var hdr strings.Builder
	for i := range 255 {
		fmt.Fprintf(&hdr, "X-%x: b\r\n", i)
	}
	nl := strings.Repeat("\n", 100000)
	interim := "HTTP/1.1 103 Early Hints\r\n" + hdr.String() + "Link: </a>\r\n\r\n"
	addr := answering(t, strings.Repeat(interim, maxInterim)+"HTTP/1.1 200 OK\r\n"+hdr.String()+fmt.Sprintf("Content-Length: %d\r\n\r\n", len(nl))+nl, "")
	r := start(t, &Proxy{Allow: hosts(t, addr)})
	code, got, err := get(t, r.client(nil), "http://"+addr+"/")
	if code != 200 || got != nl {
		t.Errorf("got %d, %d bytes, %v; want 200 and the body", code, len(got), err)
	}
}

// answering serves, to each connection's request, first and then repeat
// a thousand times a thousand, or until the connection ends.
func answering(t *testing.T, first, repeat string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
					return
				}
				io.WriteString(c, first)
				if repeat == "" {
					io.Copy(io.Discard, c)
					return
				}
				chunk := strings.Repeat(repeat, 1000)
				for range 1000 { // some 8 MB to 1 GB, or until the proxy hangs up
					if _, err := io.WriteString(c, chunk); err != nil {
						return
					}
				}
			}()
		}
	}()
	return l.Addr().String()
}

// TestRequestHeaderLines: a request of 256 header lines is forwarded, with
// a body of many lines read with it; one of 257 lines gets 431.
func TestRequestHeaderLines(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		fmt.Fprintf(w, "%d headers, %d bytes", len(r.Header), n)
	}))
	defer up.Close()
	r := start(t, &Proxy{Allow: hosts(t, "127.0.0.1:"+port(t, up.URL))})
	nl := strings.Repeat("\n", 100000)
	for _, tt := range []struct {
		lines int
		want  string
	}{
		{256, "HTTP/1.1 200"},
		{257, "HTTP/1.1 431"},
	} {
		var b strings.Builder
		fmt.Fprintf(&b, "POST %s/ HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\nConnection: close\r\n", up.URL, len(nl))
		for i := range tt.lines - 3 {
			fmt.Fprintf(&b, "X-%x: b\r\n", i)
		}
		b.WriteString("\r\n" + nl)
		c, err := net.Dial("tcp", r.addr)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, b.String())
		out, _ := io.ReadAll(c)
		c.Close()
		if !strings.HasPrefix(string(out), tt.want) {
			t.Errorf("%d lines: got %.200q, want %s", tt.lines, out, tt.want)
		}
		if tt.lines == 256 && !strings.HasSuffix(string(out), fmt.Sprintf("%d bytes", len(nl))) {
			t.Errorf("256 lines: got %.300q, want the body whole", out)
		}
	}
}

// TestUpgradeWithBody: a request to switch protocols that has a body goes
// as a plain request (the body's reader and a tunnel would read the
// client at once), and a destination that switches anyway gets the
// client a 502, not a tunnel.
func TestUpgradeWithBody(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	upgrades := make(chan string, 10)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				upgrades <- req.Header.Get("Upgrade") + "|" + req.Header.Get("Connection")
				// It switches before it reads the body, whatever was asked.
				io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
				io.Copy(io.Discard, req.Body)
			}()
		}
	}()
	r := start(t, &Proxy{Allow: hosts(t, l.Addr().String())})
	for _, tt := range []struct{ name, header string }{
		{"with a length", "Content-Length: 100000000\r\n"},
		{"chunked", "Transfer-Encoding: chunked\r\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := net.Dial("tcp", r.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			fmt.Fprintf(c, "POST http://%s/ HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n%s\r\n", l.Addr(), tt.header)
			// The client goes on writing its body while the answer comes.
			go func() {
				chunk := []byte(strings.Repeat("x", 4093))
				if strings.Contains(tt.header, "chunked") {
					chunk = []byte(fmt.Sprintf("%x\r\n%s\r\n", len(chunk), chunk))
				}
				for range 2000 {
					if _, err := c.Write(chunk); err != nil {
						return
					}
				}
			}()
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil || resp.StatusCode != http.StatusBadGateway {
				t.Fatalf("got %v %v, want 502", resp, err)
			}
			b, _ := io.ReadAll(resp.Body)
			if !strings.Contains(string(b), "switched to a protocol the request did not ask for") {
				t.Errorf("got %q", b)
			}
			select {
			case got := <-upgrades:
				if got != "|close" {
					t.Errorf("the destination got Upgrade|Connection %q, want none and close", got)
				}
			case <-time.After(5 * time.Second):
				t.Error("the destination got no request")
			}
		})
	}
}
