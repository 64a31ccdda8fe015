package netproxy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
)

// A CONNECT names the host the proxy checks and dials, but what the client
// then sends in the tunnel may name another: a TLS ClientHello's server
// name, or a plain HTTP request's Host. A server that serves many names on
// one address (a CDN's front end, a shared host) goes by those, so every
// name on an allowed host's addresses would be reached. The client's first
// bytes are read before anything is passed on, and the tunnel refused when
// they name a host the allow-list does not give the same port.

const (
	// helloTimeout bounds how long a client may take, once its tunnel is
	// set up, to send what says what it speaks.
	helloTimeout = 10 * time.Second
	// maxFirstBytes bounds what is read of it: a TLS ClientHello of 16 KiB
	// with the headers of the records that carry it, or a first line.
	maxFirstBytes = 16<<10 + 1<<10
)

// tlsAlert is a fatal access_denied alert, which a TLS client shows as the
// reason its handshake failed.
var tlsAlert = []byte{0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 49}

// tunnelRefusal is a tunnel refused, and recorded, for what the client
// sent in it.
type tunnelRefusal struct {
	answer []byte // what the client gets before the tunnel closes
}

// firstBytes is what a client sent first in a tunnel, read through r, at
// most cap(buf) bytes.
type firstBytes struct {
	r   io.Reader
	buf []byte
}

var errFirstBytes = errors.New("past the first bytes' bound")

// need reads until f holds n bytes.
func (f *firstBytes) need(n int) error {
	if n > cap(f.buf) {
		return errFirstBytes
	}
	for len(f.buf) < n {
		k, err := f.r.Read(f.buf[len(f.buf):cap(f.buf)])
		f.buf = f.buf[:len(f.buf)+k]
		if err != nil && len(f.buf) < n {
			return err
		}
	}
	return nil
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// inspect reads what the client sends first in a tunnel to host:port,
// dialled at addr, into f, and returns the tunnel's refusal if it names
// another host than the allow-list gives the port, or is plain HTTP, or
// does not come in time. A TLS ClientHello must carry no server name but
// host, or one the allow-list gives port and lets lead to addr, and no
// encrypted_client_hello; a line that is an HTTP request's is refused,
// since an http:// URL is sent to the proxy without CONNECT; anything
// else (SSH, say) passes: the destination was checked by its name and
// address, and nothing in the stream names another. An error ends the
// tunnel without a word: the client left, or ended its ClientHello half
// sent.
func (p *Proxy) inspect(f *firstBytes, host string, port int, addr netip.Addr) (*tunnelRefusal, error) {
	dest := joinHostPort(host, port)
	refused := func(why string, answer []byte) *tunnelRefusal {
		p.record(Refusal{Dest: dest, Why: why})
		return &tunnelRefusal{answer: answer}
	}
	err := f.need(1)
	switch {
	case errors.Is(err, io.EOF):
		return nil, nil // nothing, and the end of its stream: passed on
	case isTimeout(err):
		return refused(fmt.Sprintf("the client sent nothing within %s of its CONNECT", helloTimeout), nil), nil
	case err != nil:
		return nil, err
	}
	if f.buf[0] == 0x16 { // a TLS handshake record
		hello, err := readHello(f)
		var bad helloError
		switch {
		case errors.As(err, &bad):
			return refused("a TLS ClientHello "+string(bad), tlsAlert), nil
		case isTimeout(err):
			return refused(fmt.Sprintf("its TLS ClientHello did not come whole within %s", helloTimeout), tlsAlert), nil
		case err != nil:
			return nil, err
		}
		names, ech, err := parseHello(hello)
		switch {
		case err != nil:
			return refused("a malformed TLS ClientHello ("+err.Error()+")", tlsAlert), nil
		case ech:
			return refused("its TLS ClientHello carries encrypted_client_hello, whose outer server name is the front end's: the name it reaches is hidden", tlsAlert), nil
		}
		check := p.addrCheck()
		for _, raw := range names {
			name, err := policy.NormalHost(raw)
			if err != nil {
				if len(raw) > 64 {
					raw = raw[:64] + "..." // the note names it
				}
				return refused(fmt.Sprintf("its TLS server name %s is not a host name", strconv.Quote(raw)), tlsAlert), nil
			}
			if name == host {
				continue
			}
			if rule, ok := policy.MatchHost(p.Allow, name, port); ok && check(rule, addr) == "" {
				continue
			}
			p.refuse(name, port, fmt.Sprintf("TLS server name %s is not the CONNECT host %s", name, host))
			return &tunnelRefusal{answer: tlsAlert}, nil
		}
		return nil, nil
	}
	plainHTTP := func() *tunnelRefusal {
		text := "nanosandbox-mcp: the sandbox refused plain HTTP in a CONNECT tunnel to " + dest +
			": send an http:// URL's request to the proxy as it is, without CONNECT (HTTP_PROXY does)\n"
		answer := fmt.Sprintf("HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(text), text)
		return refused("plain HTTP in a CONNECT tunnel; an http:// URL's request goes to the proxy without CONNECT", []byte(answer))
	}
	for {
		switch httpLine(f.buf) {
		case lineNot:
			return nil, nil
		case lineHTTP:
			return plainHTTP(), nil
		}
		err := f.need(len(f.buf) + 1)
		switch {
		case errors.Is(err, io.EOF):
			return nil, nil // no whole line, which no server answers
		case err == errFirstBytes, isTimeout(err):
			return plainHTTP(), nil // it may still be a request line
		case err != nil:
			return nil, err
		}
	}
}

// helloError says how a ClientHello is not one the proxy can read.
type helloError string

func (e helloError) Error() string { return string(e) }

// readHello reads into f the TLS records that carry the ClientHello a
// client sends first, however they split it, and returns its body.
func readHello(f *firstBytes) ([]byte, error) {
	var msg []byte
	for off := 0; ; {
		if err := f.need(off + 5); err != nil {
			return nil, helloBound(err)
		}
		h := f.buf[off : off+5]
		n := int(h[3])<<8 | int(h[4])
		switch {
		case h[0] != 0x16:
			return nil, helloError("broken by a record of another type")
		case h[1] != 3:
			return nil, helloError("in a record of another version than TLS's")
		case n == 0 || n > 1<<14:
			return nil, helloError("in a record of " + strconv.Itoa(n) + " bytes")
		}
		if err := f.need(off + 5 + n); err != nil {
			return nil, helloBound(err)
		}
		msg = append(msg, f.buf[off+5:off+5+n]...)
		off += 5 + n
		if len(msg) < 4 {
			continue
		}
		if msg[0] != 1 {
			return nil, helloError("that is another handshake message")
		}
		size := int(msg[1])<<16 | int(msg[2])<<8 | int(msg[3])
		if 4+size > cap(f.buf) {
			return nil, helloBound(errFirstBytes)
		}
		if len(msg) >= 4+size {
			return msg[4 : 4+size], nil
		}
	}
}

func helloBound(err error) error {
	if err == errFirstBytes {
		return helloError(fmt.Sprintf("over %d KiB", maxFirstBytes>>10))
	}
	return err
}

// helloBytes reads a ClientHello's fields.
type helloBytes []byte

func (b *helloBytes) take(n int) (helloBytes, bool) {
	if n > len(*b) {
		return nil, false
	}
	v := (*b)[:n]
	*b = (*b)[n:]
	return v, true
}

// vec takes a field of a size that its first size bytes give.
func (b *helloBytes) vec(size int) (helloBytes, bool) {
	l, ok := b.take(size)
	if !ok {
		return nil, false
	}
	n := 0
	for _, c := range l {
		n = n<<8 | int(c)
	}
	return b.take(n)
}

// parseHello returns the server names a ClientHello's body carries, and
// whether it carries an encrypted one (encrypted_client_hello, 0xfe0d, or
// the draft's encrypted_server_name, 0xffce). A malformed one is an error:
// a server more lenient than this reading may find a name in it.
func parseHello(body []byte) (names []string, ech bool, err error) {
	b := helloBytes(body)
	if _, ok := b.take(2 + 32); !ok { // version, random
		return nil, false, errors.New("too short")
	}
	if v, ok := b.vec(1); !ok || len(v) > 32 {
		return nil, false, errors.New("session id")
	}
	if v, ok := b.vec(2); !ok || len(v) < 2 || len(v)%2 != 0 {
		return nil, false, errors.New("cipher suites")
	}
	if v, ok := b.vec(1); !ok || len(v) < 1 {
		return nil, false, errors.New("compression methods")
	}
	if len(b) == 0 {
		return nil, false, nil // no extensions
	}
	exts, ok := b.vec(2)
	if !ok || len(b) != 0 {
		return nil, false, errors.New("extensions")
	}
	seen := map[int]bool{}
	for len(exts) > 0 {
		t, ok1 := exts.take(2)
		data, ok2 := exts.vec(2)
		if !ok1 || !ok2 {
			return nil, false, errors.New("extensions")
		}
		typ := int(t[0])<<8 | int(t[1])
		if seen[typ] {
			return nil, false, fmt.Errorf("extension %#04x twice", typ)
		}
		seen[typ] = true
		switch typ {
		case 0xfe0d, 0xffce:
			ech = true
		case 0: // server_name
			list, ok := data.vec(2)
			if !ok || len(data) != 0 || len(list) == 0 {
				return nil, false, errors.New("server_name")
			}
			for len(list) > 0 {
				kind, ok1 := list.take(1)
				name, ok2 := list.vec(2)
				if !ok1 || !ok2 || kind[0] != 0 {
					return nil, false, errors.New("server_name")
				}
				names = append(names, string(name))
			}
		}
	}
	return names, ech, nil
}

// A first line is an HTTP request's, is not one, or may yet be one.
const (
	lineMaybe = iota
	lineHTTP
	lineNot
)

// httpLine says whether b, what a client sent first in a tunnel, begins
// with an HTTP request line: after empty lines and blanks (which servers
// skip before a request), a method token, blanks, and a target that is a
// path, "*", or a URL, or a last word "HTTP/..." (any case). Another
// first line ("SSH-2.0-OpenSSH_9.6 Ubuntu", "EHLO x", "PING") is not.
// A line ends at CR or LF.
//
// A blank is any byte some server splits a request line at, not only
// space and tab: Python's http.server decodes the line as Latin-1 and
// splits it at any white space, so "GET\xa0/\xa0HTTP/1.0" (or \x0b, \x0c,
// \x1c-\x1f, \x85) is a request there. And a known method followed by
// any byte that cannot continue a token is taken for a request at once:
// no other protocol begins that way, and what a lenient server makes of
// the rest is not the proxy's to guess.
func httpLine(b []byte) int {
	for len(b) > 0 && (b[0] == '\r' || b[0] == '\n' || isBlank(b[0])) {
		b = b[1:]
	}
	if len(b) == 0 {
		return lineMaybe
	}
	line, complete := b, false
	if i := bytes.IndexAny(b, "\r\n"); i >= 0 {
		line, complete = b[:i], true
	}
	i := 0
	for i < len(line) && strings.IndexByte(tokenBytes, line[i]) >= 0 {
		i++
	}
	switch {
	case i == 0:
		return lineNot
	case i == len(line) && complete:
		return lineNot
	case i == len(line):
		return lineMaybe
	case line[i] == ' ' || line[i] == '\t':
	case knownMethod(line[:i]):
		return lineHTTP
	case !isBlank(line[i]):
		return lineNot
	}
	rest := line[i:]
	if bytes.ContainsFunc(rest, func(r rune) bool { return r < ' ' && !isBlank(byte(r)) || r == 0x7f }) {
		return lineNot
	}
	if !complete {
		return lineMaybe
	}
	words := blankFields(rest)
	if len(words) == 0 {
		return lineNot
	}
	if t := words[0]; t[0] == '/' || t[0] == '*' || hasScheme(t) {
		return lineHTTP
	}
	if last := words[len(words)-1]; len(words) > 1 && len(last) >= 5 && bytes.EqualFold(last[:5], []byte("HTTP/")) {
		return lineHTTP
	}
	return lineNot
}

// blankFields splits b at blanks, byte by byte.
func blankFields(b []byte) [][]byte {
	var out [][]byte
	from := -1
	for i, c := range b {
		switch {
		case isBlank(c) && from >= 0:
			out, from = append(out, b[from:i]), -1
		case !isBlank(c) && from < 0:
			from = i
		}
	}
	if from >= 0 {
		out = append(out, b[from:])
	}
	return out
}

// isBlank is a byte that some server takes for white space in a request
// line: space and tab, and what Python's str.split also splits at in a
// line decoded as Latin-1.
func isBlank(c byte) bool {
	switch c {
	case ' ', '\t', 0x0b, 0x0c, 0x1c, 0x1d, 0x1e, 0x1f, 0x85, 0xa0:
		return true
	}
	return false
}

// knownMethod is a method of HTTP (RFC 9110, PATCH) or WebDAV, in any case.
func knownMethod(m []byte) bool {
	switch strings.ToUpper(string(m)) {
	case "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH",
		"PROPFIND", "PROPPATCH", "MKCOL", "COPY", "MOVE", "LOCK", "UNLOCK", "REPORT", "SEARCH":
		return true
	}
	return false
}

func hasScheme(t []byte) bool {
	i := bytes.Index(t, []byte("://"))
	if i < 1 {
		return false
	}
	for j, c := range t[:i] {
		letter := c|0x20 >= 'a' && c|0x20 <= 'z'
		if !letter && (j == 0 || !(c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return false
		}
	}
	return true
}
