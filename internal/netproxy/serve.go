package netproxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
)

// The proxy speaks HTTP/1.1 itself, with net/http's request and response
// readers and writers but neither its Server nor its Transport: those two,
// and what they pull in (HTTP/2, TLS for https:// URLs), were 0.85 MB of
// the binary, for a proxy that only ever parses a request, checks it, and
// passes bytes on. Every upstream connection carries one request, for the
// destination checked; nothing is pooled across requests or clients.

// Serve accepts connections on l until ctx is done, then closes l and every
// connection it accepted or made, and returns once every request has
// finished. It returns nil when ctx ended it, or the error that stopped l.
func (p *Proxy) Serve(ctx context.Context, l net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- p.accept(ctx, &limitListener{Listener: l, slots: make(chan struct{}, maxConns)}) }()
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	cancel() // requests in flight and their upstream dials
	l.Close()
	p.handlers.Wait()
	return err
}

// accept serves each connection l accepts in a goroutine of its own, until
// ctx is done or l fails for good.
func (p *Proxy) accept(ctx context.Context, l net.Listener) error {
	var backoff time.Duration
	for {
		c, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, net.ErrClosed) {
				return err
			}
			// Out of descriptors, say: wait and try again, as net/http's
			// server does.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
				return nil
			}
			continue
		}
		backoff = 0
		if !p.enter() {
			c.Close()
			return nil
		}
		if !p.track(c) {
			c.Close()
			p.handlers.Done()
			return nil
		}
		go func() {
			defer p.handlers.Done()
			defer p.untrack(c)
			p.serveConn(ctx, c)
		}()
	}
}

const (
	// maxResponseHeaderBytes and maxHeaderLines bound the header block of
	// an answer a destination sends, each interim one on its own, and of a
	// request (whose bytes maxHeaderBytes bounds): a block of tiny lines
	// costs a parser's map and strings many times its size, and 256
	// connections of a 1 MiB block held over 2 GB of the server's memory.
	// Package registries send a few KiB and a few dozen lines. maxInterim
	// bounds how many interim (1xx) answers come before the answer.
	maxResponseHeaderBytes = 64 << 10
	maxHeaderLines         = 256
	maxInterim             = 8
)

var (
	errHeadBytes = errors.New("header block too long")
	errHeadLines = errors.New("too many header lines")
)

// checkHead looks at the header block at the start of br (a start line,
// header lines, an empty line) before a parser holds any of it: it fails
// with errHeadBytes if the block is over maxBytes, which br's buffer must
// exceed, and with errHeadLines if it has over maxLines header lines. The
// lines are counted in the block, not in what br read beyond it. An error
// of br's is returned, for the parser to meet again; an empty start line is
// left to the parser to refuse.
func checkHead(br *bufio.Reader, maxBytes, maxLines int) error {
	n, start, lines := 0, 0, -1 // bytes looked at, where the line starts, header lines (the start line is none)
	for {
		b, err := br.Peek(max(br.Buffered(), n+1))
		for ; n < len(b); n++ {
			if b[n] != '\n' {
				continue
			}
			line := b[start:n]
			start = n + 1
			if len(line) == 0 || len(line) == 1 && line[0] == '\r' {
				if n+1 > maxBytes {
					return errHeadBytes
				}
				return nil
			}
			if lines++; lines > maxLines {
				return errHeadLines
			}
		}
		if n >= maxBytes {
			return errHeadBytes
		}
		if err != nil {
			return err
		}
	}
}

// headerLimit is the reader under a client connection's buffer: it ends
// (hit) after n bytes, which bounds a request's line and headers; the
// body is read with n lifted.
type headerLimit struct {
	r   io.Reader
	n   int64
	hit bool
}

func (h *headerLimit) Read(b []byte) (int, error) {
	if h.n <= 0 {
		h.hit = true
		return 0, io.EOF
	}
	if int64(len(b)) > h.n {
		b = b[:h.n]
	}
	n, err := h.r.Read(b)
	h.n -= int64(n)
	return n, err
}

// serveConn serves the requests a client sends on c, one after another,
// until one ends the connection.
func (p *Proxy) serveConn(ctx context.Context, c net.Conn) {
	// As net/http's server: the headers' bound, and some room for what a
	// buffer reads beyond them.
	lim := &headerLimit{r: c}
	br := bufio.NewReaderSize(lim, maxHeaderBytes+4096)
	for {
		lim.n, lim.hit = maxHeaderBytes+4096, false
		c.SetReadDeadline(time.Now().Add(readHeaderTimeout))
		err := checkHead(br, maxHeaderBytes, maxHeaderLines)
		var req *http.Request
		if err != errHeadBytes && err != errHeadLines {
			req, err = http.ReadRequest(br)
		}
		if err != nil {
			var ne net.Error
			switch {
			case err == errHeadLines:
				reply(c, http.StatusRequestHeaderFieldsTooLarge, "nanosandbox-mcp: the request has over "+strconv.Itoa(maxHeaderLines)+" header lines")
			case err == errHeadBytes, lim.hit:
				reply(c, http.StatusRequestHeaderFieldsTooLarge, "nanosandbox-mcp: the request's headers are over "+strconv.Itoa(maxHeaderBytes>>10)+" KiB")
			case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed), errors.As(err, &ne) && ne.Timeout():
				// the client is gone, or sent nothing in time
			default:
				reply(c, http.StatusBadRequest, "nanosandbox-mcp: bad request: "+err.Error())
			}
			return
		}
		c.SetReadDeadline(time.Time{})
		lim.n = math.MaxInt64
		if err := checkRequest(req); err != nil {
			reply(c, http.StatusBadRequest, "nanosandbox-mcp: bad request: "+err.Error())
			return
		}
		if !p.serveRequest(ctx, c, br, req) {
			return
		}
	}
}

// serveRequest serves one request read from br, and says whether the
// client's connection may carry another.
func (p *Proxy) serveRequest(ctx context.Context, c net.Conn, br *bufio.Reader, req *http.Request) bool {
	switch {
	case req.ProtoMajor != 1:
		reply(c, http.StatusBadRequest, "nanosandbox-mcp: the sandbox's HTTP proxy speaks HTTP/1.1")
	case req.Method == http.MethodConnect:
		p.connect(ctx, c, br, req)
	case req.URL.IsAbs():
		return p.forward(ctx, c, br, req)
	default:
		reply(c, http.StatusBadRequest, "nanosandbox-mcp: this is the sandbox's HTTP proxy: send CONNECT or an absolute URL (set HTTP_PROXY and HTTPS_PROXY to it)")
	}
	return false
}

// connect serves CONNECT host:port: a tunnel, once the destination is
// allowed and connected.
func (p *Proxy) connect(ctx context.Context, c net.Conn, br *bufio.Reader, req *http.Request) {
	host, port, err := splitTarget(req.URL.Host, 0)
	if err != nil {
		reply(c, http.StatusBadRequest, "nanosandbox-mcp: bad CONNECT target "+strconv.Quote(req.URL.Host)+": "+err.Error())
		return
	}
	up, addr, err := p.open(ctx, host, port)
	if err != nil {
		p.fail(ctx, c, err)
		return
	}
	if !p.track(up) {
		up.Close()
		return
	}
	defer p.untrack(up)
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	// What the destination sends reaches the client at once, for a
	// protocol whose server speaks first; what the client sends is looked
	// at first (tunnel.go), then passed on as it came.
	var refusing atomic.Bool
	toClient := make(chan struct{})
	go func() {
		io.Copy(c, up)
		if !refusing.Load() {
			closeWrite(c)
		}
		close(toClient)
	}()
	first := &firstBytes{r: br, buf: make([]byte, 0, maxFirstBytes)}
	c.SetReadDeadline(time.Now().Add(helloTimeout))
	refusal, err := p.inspect(first, host, port, addr)
	c.SetReadDeadline(time.Time{})
	if refusal != nil || err != nil {
		refusing.Store(true)
		up.Close()
		c.SetWriteDeadline(time.Now()) // a copy to a client that reads no more
		<-toClient
		c.SetWriteDeadline(time.Time{})
		if refusal != nil && ctx.Err() == nil {
			c.Write(refusal.answer)
		}
		return
	}
	if _, err := up.Write(first.buf); err == nil {
		io.Copy(up, br)
	}
	closeWrite(up)
	<-toClient
}

// forward serves an absolute-form request, http:// only, on a connection
// of its own to the destination, and says whether the client's connection
// may carry another request.
func (p *Proxy) forward(ctx context.Context, c net.Conn, br *bufio.Reader, req *http.Request) bool {
	if req.URL.Scheme != "http" {
		reply(c, http.StatusBadRequest, "nanosandbox-mcp: the sandbox's proxy forwards http:// URLs; for "+req.URL.Scheme+":// send CONNECT (HTTPS_PROXY does)")
		return false
	}
	host, port, err := splitTarget(req.URL.Host, 80)
	if err != nil {
		reply(c, http.StatusBadRequest, "nanosandbox-mcp: bad host "+strconv.Quote(req.URL.Host)+": "+err.Error())
		return false
	}
	// Refuse before anything else is read; open checks again, with the
	// addresses.
	if _, ok := policy.MatchHost(p.Allow, host, port); !ok {
		p.fail(ctx, c, p.refuse(host, port, "not in --allow-net"))
		return false
	}
	up, _, err := p.open(ctx, host, port)
	if err != nil {
		p.fail(ctx, c, err)
		return false
	}
	if !p.track(up) {
		up.Close()
		return false
	}
	defer p.untrack(up)

	clientClose, http10 := req.Close, !req.ProtoAtLeast(1, 1)
	// The request as the destination gets it: in origin form, its Host
	// the one dialled (whatever Host the client sent), without the
	// client's hop-by-hop headers, asking to close when answered (or to
	// switch protocols, as the client asked).
	req.URL.Host = joinHostPort(host, port)
	if port == 80 {
		req.URL.Host = strings.TrimSuffix(req.URL.Host, ":80")
	}
	req.Host = req.URL.Host
	upgrade := upgradeOf(req.Header)
	if req.ContentLength != 0 || len(req.TransferEncoding) > 0 {
		// A switch would leave the body's reader and the tunnel's reading
		// the client at once; RFC 9110 lets a server ignore Upgrade, and a
		// websocket's request has no body: the request goes as a plain one.
		upgrade = ""
	}
	removeHopHeaders(req.Header)
	req.Close = upgrade == ""
	if upgrade != "" {
		req.Header.Set("Connection", "Upgrade")
		req.Header.Set("Upgrade", upgrade)
	}
	if _, ok := req.Header["User-Agent"]; !ok {
		req.Header["User-Agent"] = []string{""} // none, not Go's
	}
	if strings.EqualFold(req.Header.Get("Expect"), "100-continue") {
		// The body is sent on at once: the client may send it now.
		req.Header.Del("Expect")
		if !http10 {
			if _, err := io.WriteString(c, "HTTP/1.1 100 Continue\r\n\r\n"); err != nil {
				return false
			}
		}
	}
	wrote := make(chan error, 1)
	go func() { wrote <- req.Write(up) }()
	// The answer's headers are bounded as a request's are, and so is each
	// interim answer's, and their number.
	ubr := bufio.NewReaderSize(up, maxResponseHeaderBytes+4096)
	readAnswer := func() (*http.Response, error) {
		switch err := checkHead(ubr, maxResponseHeaderBytes, maxHeaderLines); err {
		case errHeadBytes:
			return nil, fmt.Errorf("headers over %d KiB", maxResponseHeaderBytes>>10)
		case errHeadLines:
			return nil, fmt.Errorf("over %d header lines", maxHeaderLines)
		}
		return http.ReadResponse(ubr, req)
	}
	resp, err := readAnswer()
	for interim := 0; err == nil && resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols; interim++ {
		if interim == maxInterim {
			err = errors.New("too many interim answers")
			break
		}
		if !http10 {
			removeHopHeaders(resp.Header)
			fmt.Fprintf(c, "HTTP/1.1 %03d %s\r\n", resp.StatusCode, http.StatusText(resp.StatusCode))
			resp.Header.Write(c)
			io.WriteString(c, "\r\n")
		}
		resp, err = readAnswer()
	}
	if err != nil {
		p.fail(ctx, c, fmt.Errorf("no answer from %s: %w", joinHostPort(host, port), err))
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusSwitchingProtocols {
		if upgrade == "" || !strings.EqualFold(upgradeOf(resp.Header), upgrade) {
			p.fail(ctx, c, fmt.Errorf("%s switched to a protocol the request did not ask for", joinHostPort(host, port)))
			return false
		}
		removeHopHeaders(resp.Header)
		resp.Header.Set("Connection", "Upgrade")
		resp.Header.Set("Upgrade", upgrade)
		fmt.Fprintf(c, "HTTP/1.1 101 %s\r\n", http.StatusText(http.StatusSwitchingProtocols))
		resp.Header.Write(c)
		if _, err := io.WriteString(c, "\r\n"); err != nil {
			return false
		}
		// The request, which has no body, is written whole before the
		// tunnel writes after it.
		if err := <-wrote; err != nil {
			return false
		}
		pipe(c, br, up, ubr)
		return false
	}
	removeHopHeaders(resp.Header)
	resp.ProtoMajor, resp.ProtoMinor = 1, 1
	if http10 && isChunked(resp.TransferEncoding) {
		resp.TransferEncoding, resp.ContentLength = nil, -1 // to its end, which the close marks
	}
	// The connection ends after a body whose end only the close marks.
	closeAfter := clientClose || resp.ContentLength < 0 && !isChunked(resp.TransferEncoding)
	resp.Close = closeAfter
	if err := resp.Write(c); err != nil {
		return false
	}
	// The request's body is read to its end before the next request is:
	// unless it was, the connection ends. The destination may answer
	// before the request is written whole: its connection is closed once
	// the write ended, or gave up.
	select {
	case err := <-wrote:
		return err == nil && !closeAfter
	case <-time.After(50 * time.Millisecond):
		up.Close()                         // a destination that reads no more
		c.SetReadDeadline(time.Unix(1, 0)) // a body the client never finished
		<-wrote
		return false
	}
}

// checkRequest refuses what net/http's server refuses beyond what its
// reader does: a header that is not one, and a CONNECT target that is not
// host:port. (The reader refuses a second Host header; the one Host
// header of an absolute-form request is ignored, as RFC 9112 says a proxy
// must: the destination gets the URL's host.)
func checkRequest(req *http.Request) error {
	for name, values := range req.Header {
		if name == "" || strings.Trim(name, tokenBytes) != "" {
			return fmt.Errorf("a malformed header name %q", name)
		}
		for _, v := range values {
			if strings.ContainsFunc(v, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }) {
				return fmt.Errorf("a control character in header %s", name)
			}
		}
	}
	if req.Method == http.MethodConnect && req.RequestURI != req.URL.Host {
		return errors.New("a CONNECT target is host:port, and nothing else")
	}
	return nil
}

const (
	alnum      = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	tokenBytes = alnum + "!#$%&'*+-.^_`|~"
)

// hopHeaders are the headers of one hop, never passed on (RFC 9110
// section 7.6.1), beside those the Connection header names.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func removeHopHeaders(h http.Header) {
	for _, v := range h["Connection"] {
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
}

// upgradeOf returns the protocol h asks to switch to, if its Connection
// header names Upgrade.
func upgradeOf(h http.Header) string {
	for _, v := range h["Connection"] {
		for _, name := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(name), "upgrade") {
				return h.Get("Upgrade")
			}
		}
	}
	return ""
}

func isChunked(te []string) bool { return len(te) > 0 && te[0] == "chunked" }

// reply answers the client with code and text, and ends the connection.
func reply(c net.Conn, code int, text string) {
	text += "\n"
	fmt.Fprintf(c, "HTTP/1.1 %03d %s\r\nContent-Type: text/plain; charset=utf-8\r\nX-Content-Type-Options: nosniff\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		code, http.StatusText(code), len(text), text)
}

// fail answers a request the proxy could not carry out: 403 for a refusal,
// 502 for a destination that could not be reached; nothing once the call
// has ended.
func (p *Proxy) fail(ctx context.Context, c net.Conn, err error) {
	if ctx.Err() != nil {
		return
	}
	var re *refusedError
	if !errors.As(err, &re) {
		reply(c, http.StatusBadGateway, "nanosandbox-mcp: "+err.Error())
		return
	}
	body := fmt.Sprintf("nanosandbox-mcp: the sandbox refused %s: %s\n"+
		"To allow it, the server must be started with --allow-net %s\n", re.Dest, re.Why, re.Allow)
	// The reason phrase says it too: clients that show no body (on CONNECT,
	// most of them) show the status line.
	fmt.Fprintf(c, "HTTP/1.1 403 Forbidden by the nanosandbox-mcp sandbox: %s: %s; to allow it: --allow-net %s\r\n"+
		"Content-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		re.Dest, re.Why, re.Allow, len(body), body)
}
