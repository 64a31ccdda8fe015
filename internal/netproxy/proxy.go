package netproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
)

const (
	// dialTimeout bounds one connection attempt from the host, and
	// lookupTimeout one name lookup.
	dialTimeout   = 10 * time.Second
	lookupTimeout = 10 * time.Second
	// maxConns bounds the connections one call holds open through the
	// proxy at once, each two descriptors in the server; more wait to be
	// accepted.
	maxConns = 256
	// readHeaderTimeout bounds how long a client may take to send a
	// request's headers.
	readHeaderTimeout = 30 * time.Second
	// maxHeaderBytes bounds a request's line and headers. Go's default (1
	// MiB) let 256 connections of tiny header lines hold some 2.7 GB of
	// the server's memory, outside every limit of the command's; package
	// managers send a few KiB.
	maxHeaderBytes = 32 << 10
	// maxRefused bounds the destinations a call's refusals remember; the
	// rest are counted.
	maxRefused = 256
)

// Proxy is the proxy of one call. Set its fields, then call Serve once; the
// zero value refuses everything.
type Proxy struct {
	// Allow lists the destinations commands may reach. If empty, every
	// request is refused.
	Allow []policy.Host
	// Lookup resolves a host name. If nil, net.DefaultResolver's
	// LookupNetIP with "ip" is used.
	Lookup func(ctx context.Context, host string) ([]netip.Addr, error)
	// Dial connects to an address ("192.0.2.1:443") that Serve checked.
	// If nil, a net.Dialer with a timeout of dialTimeout is used.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)

	// interfaces lists this machine's interface addresses and networks;
	// if nil, interfaceNets does.
	interfaces func() []ifaceNet

	mu       sync.Mutex
	closed   bool
	conns    map[net.Conn]struct{} // every connection accepted or made, until it ends
	refused  map[string]Refusal    // by destination, at most maxRefused
	dropped  int                   // distinct refusals past maxRefused
	handlers sync.WaitGroup
}

// Refusal is one destination the proxy refused.
type Refusal struct {
	Dest string // "example.com:443"
	Why  string // "not in --allow-net", "resolves to 10.0.0.1, a private address"
	// Allow is the --allow-net value that would allow Dest. If empty, none
	// would: the proxy refused what a tunnel to Dest carried (plain HTTP,
	// an encrypted ClientHello), not where it led.
	Allow string
}

// enter counts a request in, unless the proxy is closing.
func (p *Proxy) enter() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.handlers.Add(1)
	return true
}

// track keeps c to be closed when the call ends; false if it has ended.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	if p.conns == nil {
		p.conns = map[net.Conn]struct{}{}
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

// Refused returns the destinations refused so far, sorted (at most
// maxRefused of them), and how many more were refused.
func (p *Proxy) Refused() ([]Refusal, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Refusal, 0, len(p.refused))
	for _, r := range p.refused {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Dest < out[j].Dest })
	return out, p.dropped
}

// refusedError is a destination the policy does not allow.
type refusedError struct{ Refusal }

func (e *refusedError) Error() string { return e.Dest + ": " + e.Why }

// refuse records a refusal of host on port and returns it as an error.
func (p *Proxy) refuse(host string, port int, why string) error {
	r := Refusal{Dest: joinHostPort(host, port), Why: why, Allow: host}
	switch {
	case port != 80 && port != 443:
		r.Allow = r.Dest
	case port == 443 && policy.PresetFor(host) != "":
		r.Allow = policy.PresetFor(host)
	}
	return p.record(r)
}

// record records r and returns it as an error.
func (p *Proxy) record(r Refusal) error {
	p.mu.Lock()
	if p.refused == nil {
		p.refused = map[string]Refusal{}
	}
	switch _, ok := p.refused[r.Dest]; {
	case ok:
	case len(p.refused) < maxRefused:
		p.refused[r.Dest] = r
	default:
		p.dropped++ // a repeat past the bound counts again: a count, not a set
	}
	p.mu.Unlock()
	return &refusedError{r}
}

// open checks host and port against the allow-list, resolves host, checks
// every address, and connects to one of them, which it returns.
func (p *Proxy) open(ctx context.Context, host string, port int) (net.Conn, netip.Addr, error) {
	rule, ok := policy.MatchHost(p.Allow, host, port)
	if !ok {
		return nil, netip.Addr{}, p.refuse(host, port, "not in --allow-net")
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		lookup := p.Lookup
		if lookup == nil {
			lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
				return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
			}
		}
		lctx, cancel := context.WithTimeout(ctx, lookupTimeout)
		addrs, err = lookup(lctx, host)
		cancel()
		if err == nil && len(addrs) == 0 {
			err = errors.New("no address")
		}
		if err != nil {
			return nil, netip.Addr{}, fmt.Errorf("cannot resolve %s from the host: %w", host, err)
		}
	}
	check := p.addrCheck()
	for _, a := range addrs {
		if what := check(rule, a); what != "" {
			return nil, netip.Addr{}, p.refuse(host, port, fmt.Sprintf("resolves to %s, %s; only a host listed by its exact name may", a.Unmap(), what))
		}
	}
	dial := p.Dial
	if dial == nil {
		dial = (&net.Dialer{Timeout: dialTimeout}).DialContext
	}
	var errs []error
	for _, a := range addrs {
		c, err := dial(ctx, "tcp", netip.AddrPortFrom(a.Unmap(), uint16(port)).String())
		if err == nil {
			return c, a.Unmap(), nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, netip.Addr{}, fmt.Errorf("cannot connect to %s from the host: %w", joinHostPort(host, port), errors.Join(errs...))
}

// addrCheck returns a function that says why an address may not be
// reached through a rule: unless the user listed the host exactly, it is
// neither of a kind that leads to the host or to a network it sits on, nor
// this machine's own or on a network of its interfaces (listed once, when
// an address needs it). Empty if it may.
func (p *Proxy) addrCheck() func(rule policy.Host, a netip.Addr) string {
	var nets []ifaceNet
	return func(rule policy.Host, a netip.Addr) string {
		if rule.Internal() {
			return ""
		}
		if kind := internal(a); kind != "" {
			return "a " + kind + " address"
		}
		if nets == nil {
			list := p.interfaces
			if list == nil {
				list = interfaceNets
			}
			nets = list()
		}
		return own(nets, a)
	}
}

// pipe copies both ways between the client (read through fromClient,
// which holds what it sent after its request) and up (read through
// fromUp, which may hold what it sent after its answer), passing each
// end-of-stream on, until both directions end or a connection is closed.
func pipe(client net.Conn, fromClient io.Reader, up net.Conn, fromUp io.Reader) {
	done := make(chan struct{})
	go func() {
		io.Copy(up, fromClient)
		closeWrite(up)
		close(done)
	}()
	io.Copy(client, fromUp)
	closeWrite(client)
	<-done
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	} else {
		c.Close()
	}
}

// splitTarget reads "host:port" as CONNECT and URLs give it, or "host"
// alone when defaultPort is not zero, and returns the host as
// policy.NormalHost gives it.
func splitTarget(hostport string, defaultPort int) (string, int, error) {
	host, portText := hostport, ""
	hasPort := false
	switch {
	case strings.HasPrefix(hostport, "["):
		hasPort = !strings.HasSuffix(hostport, "]")
	case strings.Count(hostport, ":") == 1:
		hasPort = true
	case strings.Count(hostport, ":") > 1:
		return "", 0, errors.New("an IPv6 address must be in brackets")
	}
	if hasPort {
		var err error
		host, portText, err = net.SplitHostPort(hostport)
		if err != nil {
			return "", 0, errors.New("not host:port")
		}
	} else {
		if defaultPort == 0 {
			return "", 0, errors.New("no port")
		}
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	}
	if strings.HasPrefix(hostport, "[") != strings.Contains(host, ":") {
		return "", 0, errors.New("brackets hold an IPv6 address, and only one")
	}
	port := defaultPort
	if hasPort {
		n, err := strconv.Atoi(portText)
		if err != nil || n < 1 || n > 65535 || portText[0] < '0' || portText[0] > '9' {
			return "", 0, errors.New("not a port")
		}
		port = n
	}
	name, err := policy.NormalHost(host)
	if err != nil {
		return "", 0, err
	}
	return name, port, nil
}

func joinHostPort(host string, port int) string {
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// limitListener holds at most cap(slots) connections open at once.
type limitListener struct {
	net.Listener
	slots chan struct{}
}

func (l *limitListener) Accept() (net.Conn, error) {
	l.slots <- struct{}{}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitConn{Conn: c, release: sync.OnceFunc(func() { <-l.slots })}, nil
}

type limitConn struct {
	net.Conn
	release func()
}

func (c *limitConn) Close() error {
	c.release()
	return c.Conn.Close()
}

// CloseWrite passes an end of stream on, where the connection can.
func (c *limitConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Close()
}
