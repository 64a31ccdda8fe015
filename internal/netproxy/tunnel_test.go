package netproxy

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// tunnel opens a CONNECT tunnel to target through r and returns it once
// the proxy answered 200.
func tunnel(t *testing.T, r *running, target string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", r.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %[1]s\r\n\r\n", target)
	// Read the answer byte by byte: what follows it is the tunnel's.
	var head []byte
	one := make([]byte, 1)
	for !bytes.HasSuffix(head, []byte("\r\n\r\n")) {
		if _, err := c.Read(one); err != nil {
			t.Fatalf("CONNECT %s: %q %v", target, head, err)
		}
		head = append(head, one[0])
	}
	if !bytes.HasPrefix(head, []byte("HTTP/1.1 200 ")) {
		t.Fatalf("CONNECT %s: got %q", target, head)
	}
	return c
}

// TestConnectServerName: a TLS tunnel reaches the server name the CONNECT
// named, or another the allow-list gives the same port and lets lead to
// the address dialled; another name is refused with a TLS alert, and the
// destination never sees its handshake.
func TestConnectServerName(t *testing.T) {
	roots, cert := testCA(t)
	var mu sync.Mutex
	var seen []string // server names the destination saw
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "secure %s", r.TLS.ServerName)
	}))
	up.TLS = &tls.Config{
		Certificates: []tls.Certificate{cert},
		GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
			mu.Lock()
			seen = append(seen, h.ServerName)
			mu.Unlock()
			return nil, nil
		},
	}
	up.Config.ErrorLog = log.New(io.Discard, "", 0)
	up.StartTLS()
	defer up.Close()
	p := port(t, up.URL)
	r := start(t, &Proxy{
		Allow: hosts(t, "secure.test:"+p, "also.test:"+p, "127.0.0.1:"+p, "*.pattern.test:"+p, "other.port.test:1"),
		Lookup: lookupTable(map[string][]string{
			"secure.test": {"127.0.0.1"},
			"also.test":   {"127.0.0.1"},
		}),
	})
	for _, tt := range []struct {
		name, target, sni string
		ok                bool
	}{
		{"the CONNECT host", "secure.test:" + p, "secure.test", true},
		{"in another case", "secure.test:" + p, "SECURE.test", true},
		{"no name", "127.0.0.1:" + p, "", true},
		{"another name the allow-list gives the port", "secure.test:" + p, "also.test", true},
		{"an unlisted name", "secure.test:" + p, "elsewhere.test", false},
		{"a name on the IP the CONNECT named", "127.0.0.1:" + p, "elsewhere.test", false},
		{"a name listed on another port", "secure.test:" + p, "other.port.test", false},
		{"a name a pattern gives, on a loopback address", "secure.test:" + p, "a.pattern.test", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := tunnel(t, r, tt.target)
			tc := tls.Client(c, &tls.Config{ServerName: tt.sni, RootCAs: roots, InsecureSkipVerify: true})
			err := tc.Handshake()
			if !tt.ok {
				if err == nil || !strings.Contains(err.Error(), "access denied") {
					t.Errorf("got %v, want the proxy's access_denied alert", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(tc, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
			resp, err := http.ReadResponse(bufio.NewReader(tc), nil)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("got %v %v", resp, err)
			}
		})
	}
	mu.Lock()
	if diff := cmp.Diff([]string{"secure.test", "SECURE.test", "", "also.test"}, seen); diff != "" {
		t.Errorf("the destination saw server names (-want +got):\n%s", diff)
	}
	mu.Unlock()
	got, _ := r.p.Refused()
	want := []Refusal{
		{Dest: "a.pattern.test:" + p, Why: "TLS server name a.pattern.test is not the CONNECT host secure.test", Allow: "a.pattern.test:" + p},
		{Dest: "elsewhere.test:" + p, Why: "TLS server name elsewhere.test is not the CONNECT host secure.test", Allow: "elsewhere.test:" + p},
		{Dest: "other.port.test:" + p, Why: "TLS server name other.port.test is not the CONNECT host secure.test", Allow: "other.port.test:" + p},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Refused (-want +got):\n%s", diff)
	}
}

// record is one TLS record of type typ holding b.
func record(typ byte, b []byte) []byte {
	return append([]byte{typ, 3, 1, byte(len(b) >> 8), byte(len(b))}, b...)
}

// vec16 prefixes b with its length in two bytes.
func vec16(b []byte) []byte { return append([]byte{byte(len(b) >> 8), byte(len(b))}, b...) }

// extension is a ClientHello extension of type typ holding b.
func extension(typ uint16, b []byte) []byte {
	return append([]byte{byte(typ >> 8), byte(typ)}, vec16(b)...)
}

// serverName is a server_name extension naming names.
func serverName(names ...string) []byte {
	var list []byte
	for _, n := range names {
		list = append(list, 0)
		list = append(list, vec16([]byte(n))...)
	}
	return extension(0, vec16(list))
}

// clientHello is a ClientHello handshake message carrying exts.
func clientHello(exts ...[]byte) []byte {
	body := append([]byte{3, 3}, make([]byte, 32)...) // version, random
	body = append(body, 0)                            // no session id
	body = append(body, 0, 2, 0x13, 0x01)             // one cipher suite
	body = append(body, 1, 0)                         // no compression
	body = append(body, vec16(bytes.Join(exts, nil))...)
	return append([]byte{1, byte(len(body) >> 16), byte(len(body) >> 8), byte(len(body))}, body...)
}

// recorder is a destination that keeps what each connection sent it
// (until its end of stream), after sending greeting.
type recorder struct {
	addr string
	got  chan []byte
}

func newRecorder(t *testing.T, greeting string) *recorder {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	rec := &recorder{addr: l.Addr().String(), got: make(chan []byte, 10)}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.WriteString(c, greeting)
				b, _ := io.ReadAll(c)
				io.WriteString(c, "bye")
				rec.got <- b
			}()
		}
	}()
	return rec
}

// received is what the recorder's next connection sent it.
func (rec *recorder) received(t *testing.T) []byte {
	t.Helper()
	select {
	case b := <-rec.got:
		return b
	case <-time.After(5 * time.Second):
		t.Fatal("the destination got no connection")
		return nil
	}
}

// TestConnectHelloBytes: a ClientHello however split, in records and in
// writes, is read whole and passed on as it came, with what follows it; one
// that names another host, carries encrypted_client_hello, or is malformed
// is refused before the destination gets a byte.
func TestConnectHelloBytes(t *testing.T) {
	rec := newRecorder(t, "")
	p := port(t, "http://"+rec.addr)
	named := clientHello(extension(0x000a, []byte{0, 2, 0, 0x1d}), serverName("REC.test."))
	noExtensions := clientHello()
	noExtensions = append([]byte{1, 0, 0, byte(len(noExtensions) - 6)}, noExtensions[4:len(noExtensions)-2]...)
	other := clientHello(serverName("other.test"))
	split := func(hello []byte, at ...int) []byte { // records of hello cut at at
		var out []byte
		last := 0
		for _, i := range append(at, len(hello)) {
			out = append(out, record(0x16, hello[last:i])...)
			last = i
		}
		return out
	}
	for _, tt := range []struct {
		name   string
		writes [][]byte
		why    string // the refusal; empty if passed on
	}{
		{"one record", [][]byte{record(0x16, named), []byte("after")}, ""},
		{"in three records, in six writes", func() [][]byte {
			b := split(named, 1, 20)
			return [][]byte{b[:2], b[2:5], b[5:7], b[7:30], b[30:], []byte("after")}
		}(), ""},
		{"no extensions", [][]byte{record(0x16, noExtensions)}, ""},
		{"another name, in two records", [][]byte{split(other, 10)}, "TLS server name other.test is not the CONNECT host rec.test"},
		{"two names", [][]byte{record(0x16, clientHello(serverName("rec.test", "other.test")))}, "TLS server name other.test is not the CONNECT host rec.test"},
		{"encrypted_client_hello", [][]byte{record(0x16, clientHello(serverName("rec.test"), extension(0xfe0d, []byte{0, 1, 2})))}, "encrypted_client_hello"},
		{"server_name twice", [][]byte{record(0x16, clientHello(serverName("rec.test"), serverName("other.test")))}, "extension 0x0000 twice"},
		{"a name that is no host name", [][]byte{record(0x16, clientHello(serverName("a\x00b")))}, "is not a host name"},
		{"another record inside", [][]byte{record(0x16, other[:10]), record(0x17, []byte("x")), record(0x16, other[10:])}, "broken by a record of another type"},
		{"a hello too long", [][]byte{record(0x16, []byte{1, 0, 0x50, 0})}, "over 17 KiB"},
		{"not a ClientHello", [][]byte{record(0x16, []byte{2, 0, 0, 0})}, "another handshake message"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := start(t, &Proxy{ // a proxy of its own: refusals are kept one by destination
				Allow:  hosts(t, "rec.test:"+p),
				Lookup: lookupTable(map[string][]string{"rec.test": {"127.0.0.1"}}),
			})
			c := tunnel(t, r, "rec.test:"+p)
			var want []byte
			for _, w := range tt.writes {
				c.Write(w)
				want = append(want, w...)
				time.Sleep(10 * time.Millisecond)
			}
			c.(*net.TCPConn).CloseWrite()
			back, _ := io.ReadAll(c)
			if tt.why == "" {
				if got := rec.received(t); !bytes.Equal(got, want) {
					t.Errorf("the destination got %q, want %q", got, want)
				}
				if string(back) != "bye" {
					t.Errorf("the client got %q back, want the destination's", back)
				}
				return
			}
			if got := rec.received(t); len(got) != 0 {
				t.Errorf("the destination got %q", got)
			}
			if !bytes.Equal(back, tlsAlert) {
				t.Errorf("the client got %q, want an alert", back)
			}
			refused, _ := r.p.Refused()
			found := false
			for _, x := range refused {
				found = found || strings.Contains(x.Why, tt.why)
			}
			if !found {
				t.Errorf("refusals %v, want one saying %q", refused, tt.why)
			}
		})
	}
}

// TestConnectPlainHTTP: a plain HTTP request in a tunnel is refused in
// the tunnel, with an answer that says to send it without CONNECT, and
// never reaches the destination; the refusal is noted, with no flag.
func TestConnectPlainHTTP(t *testing.T) {
	rec := newRecorder(t, "")
	target := rec.addr
	r := start(t, &Proxy{Allow: hosts(t, "127.0.0.1:"+port(t, "http://"+target))})
	for _, tt := range []struct {
		name   string
		writes []string
	}{
		{"a request", []string{"GET / HTTP/1.1\r\nHost: other.test\r\n\r\n"}},
		{"after empty lines", []string{"\r\n\r\nGET / HTTP/1.1\r\nHost: other.test\r\n\r\n"}},
		{"in parts", []string{"GE", "T http://other.test/", " HTTP/1.1\r\n\r\n"}},
		{"in lower case, tabs between", []string{"post\t/x\thttp/1.0\r\n\r\n"}},
		{"absolute, no version", []string{"GET http://other.test/\r\n"}},
		{"HTTP/2's preface", []string{"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"}},
		{"a line without end", []string{"GET /" + strings.Repeat("a", maxFirstBytes-5)}},
		// Python's http.server splits a Latin-1 line at any white space.
		{"no-break spaces between", []string{"GET\xa0/\xa0HTTP/1.0\r\n\r\n"}},
		{"vertical tab, form feed", []string{"GET\x0b/\x0cHTTP/1.0\r\n\r\n"}},
		{"another method, NEL between", []string{"FETCH\x85/\x85HTTP/1.0\r\n\r\n"}},
		{"a blank first", []string{"\x1fGET / HTTP/1.0\r\n\r\n"}},
		{"a method, then any odd byte", []string{"GET\x01/ HTTP/1.0\r\n\r\n"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := tunnel(t, r, target)
			for _, w := range tt.writes {
				io.WriteString(c, w)
				time.Sleep(10 * time.Millisecond)
			}
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 403 || !strings.Contains(string(b), "send an http:// URL's request to the proxy as it is, without CONNECT") {
				t.Errorf("got %d %q", resp.StatusCode, b)
			}
			if got := rec.received(t); len(got) != 0 {
				t.Errorf("the destination got %q", got)
			}
		})
	}
	want := []Refusal{{Dest: target, Why: "plain HTTP in a CONNECT tunnel; an http:// URL's request goes to the proxy without CONNECT"}}
	if diff := cmp.Diff(want, func() []Refusal { got, _ := r.p.Refused(); return got }()); diff != "" {
		t.Errorf("Refused (-want +got):\n%s", diff)
	}
}

// TestConnectOtherProtocols: what is neither TLS nor HTTP passes as it
// is, both ways, a protocol whose server speaks first too.
func TestConnectOtherProtocols(t *testing.T) {
	for _, tt := range []struct{ name, greeting, send string }{
		{"SSH", "", "SSH-2.0-OpenSSH_9.6p1 Ubuntu-3ubuntu13.5\r\n\x00\x00\x01\x02"},
		{"SMTP, its server first", "220 mail.test ESMTP\r\n", "EHLO sandbox\r\nMAIL FROM:<a@b>\r\n"},
		{"binary", "", "\x00\x00\x00\x08\x04\xd2\x16\x2f"},
		{"a line without a path", "", "HELLO world HTTPS\r\n"},
		{"Redis inline, a method's name", "", "GET session:1\r\nSET a b\r\n"},
		{"memcached", "", "get key1 key2\r\n"},
		{"AMQP", "", "AMQP\x00\x00\x09\x01"},
		{"nothing", "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := newRecorder(t, tt.greeting)
			r := start(t, &Proxy{Allow: hosts(t, "127.0.0.1:"+port(t, "http://"+rec.addr))})
			c := tunnel(t, r, rec.addr)
			if tt.greeting != "" {
				got := make([]byte, len(tt.greeting))
				if _, err := io.ReadFull(c, got); err != nil || string(got) != tt.greeting {
					t.Fatalf("before the client spoke: got %q %v, want %q", got, err, tt.greeting)
				}
			}
			io.WriteString(c, tt.send)
			c.(*net.TCPConn).CloseWrite()
			back, err := io.ReadAll(c)
			if err != nil || string(back) != "bye" {
				t.Errorf("the client got %q %v, want the destination's", back, err)
			}
			if got := rec.received(t); string(got) != tt.send {
				t.Errorf("the destination got %q, want %q", got, tt.send)
			}
			if got, _ := r.p.Refused(); len(got) != 0 {
				t.Errorf("refused %v", got)
			}
		})
	}
}

// TestHTTPLine: what may begin an HTTP request, and what cannot.
func TestHTTPLine(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int
	}{
		{"GET / HTTP/1.1\r\n", lineHTTP},
		{"OPTIONS * HTTP/1.1\n", lineHTTP},
		{"GET example.com:80 HTTP/1.1\r", lineHTTP},
		{"GET https://x/\r\n", lineHTTP},
		{" \r\nget /", lineMaybe},
		{"GET", lineMaybe},
		{"", lineMaybe},
		{"\r\n", lineMaybe},
		{"PING\r\n", lineNot},
		{"*1\r\n$4\r\nPING\r\n", lineNot},
		{"SSH-2.0-OpenSSH_9.6 Ubuntu\r\n", lineNot},
		{"EHLO x:y\r\n", lineNot},
		{"GET\x00/ HTTP/1.1\r\n", lineHTTP},
		{"get\x85", lineHTTP},
		{"XGET\x00/ HTTP/1.1\r\n", lineNot},
		{"FOO\xa0/x HTTP/1.1\r\n", lineHTTP},
		{"FOO\x0bx\x0bhttp/1.1\r\n", lineHTTP},
		{"FOO\x0bx\x0b", lineMaybe},
		{"\xa0\x0cGET / HTTP/1.1\r\n", lineHTTP},
		{"FOO\x0bx\x0bHTTPS\r\n", lineNot},
		{"AMQP\x00\x00\x09\x01", lineNot},
		{"GET /\x01 HTTP/1.1\r\n", lineNot},
		{"\x16\x03\x01", lineNot},
		{"GET x HTTP\r\n", lineNot},
	} {
		if got := httpLine([]byte(tt.in)); got != tt.want {
			t.Errorf("httpLine(%q): got %d, want %d", tt.in, got, tt.want)
		}
	}
}

// FuzzParseHello: no panic, whatever a ClientHello holds.
func FuzzParseHello(f *testing.F) {
	f.Add(clientHello(serverName("a.test")))
	f.Add(clientHello(serverName("a.test", "b.test"), extension(0xfe0d, nil))[4:])
	f.Fuzz(func(t *testing.T, b []byte) {
		parseHello(b)
		readHello(&firstBytes{r: bytes.NewReader(b), buf: make([]byte, 0, maxFirstBytes)})
	})
}
