package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/nanosandbox/nanosandbox-mcp/internal/netproxy"
	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
)

// The network of a call (DESIGN.md §3, "Network allow-list"). The helper
// brings up the sandbox's own loopback, makes the proxy's listening socket
// there, and hands it to the server on netFD; the server's proxy accepts on
// it and dials from the host, so nothing listens on the host. The sandbox has
// no other interface and no route: a connection that bypasses the proxy
// fails at once with ENETUNREACH, and so does a name lookup, whose server is
// either out of reach or the sandbox's own loopback, where nothing answers
// (connection refused). The proxy runs for every call, with or without an
// allow-list (with none it refuses everything, and its 403s and the
// result's note say that the sandbox, not the internet, said no), and ends
// every connection when the call ends. With --host-network none of this
// happens: the helper shares the host's network namespace.

// proxyPort is the port of the proxy on the sandbox's loopback: squid's, so
// HTTP_PROXY reads as a proxy. The namespace is the call's own, so nothing
// else holds it.
const proxyPort = 3128

// proxyURL is what the proxy variables inside say (policy.ProxyEnv).
var proxyURL = "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(proxyPort))

// proxyBacklog is how many connections wait to be accepted: the proxy
// accepts them only once the server has the socket, and holds 256 at once.
const proxyBacklog = 1024

// listenProxy makes the proxy's listening socket on the sandbox's loopback
// and hands it to the server on netFD. Neither stays open here: the command
// cannot accept on the proxy's socket, only connect to it.
func listenProxy() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrInet4{Port: proxyPort, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return fmt.Errorf("bind 127.0.0.1:%d: %w", proxyPort, err)
	}
	if err := unix.Listen(fd, proxyBacklog); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	err = unix.Sendmsg(netFD, []byte{0}, unix.UnixRights(fd), nil, 0)
	unix.Close(netFD)
	if err != nil {
		return fmt.Errorf("sendmsg(SCM_RIGHTS): %w", err)
	}
	return nil
}

// netPair returns the two ends of the unix socket on which a helper hands
// the server its proxy's listening socket: the server's, and the helper's
// (its netFD).
func netPair() (server, helper *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("socketpair: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "proxy socket"), os.NewFile(uintptr(fds[1]), "proxy socket"), nil
}

// callProxy is the proxy of one call, serving on the listening socket its
// helper hands over.
type callProxy struct {
	proxy *netproxy.Proxy
	stop  context.CancelFunc
	done  chan struct{} // closed once the proxy has ended every connection
}

// serveProxy runs the proxy of one call, once its helper hands over the
// listening socket on conn, which it takes. It returns nil for a call on
// the host's network (conn nil).
func (s *linuxSandbox) serveProxy(conn *os.File) *callProxy {
	if conn == nil {
		return nil
	}
	ctx, stop := context.WithCancel(context.Background())
	p := &callProxy{
		proxy: &netproxy.Proxy{Allow: s.pol.AllowNet, Lookup: s.lookup},
		stop:  stop,
		done:  make(chan struct{}),
	}
	go func() {
		defer close(p.done)
		l, err := receiveListener(ctx, conn)
		if err != nil {
			// The helper ended before it made one: the call did not run,
			// and its reports say why.
			return
		}
		p.proxy.Serve(ctx, l)
	}()
	return p
}

// end stops the proxy, once the call's processes are gone: it closes the
// listening socket and every connection, and returns the note about what
// it refused, or "". It may be called on nil.
func (p *callProxy) end() string {
	if p == nil {
		return ""
	}
	p.stop()
	<-p.done
	return netproxy.Note(p.proxy.Refused())
}

// receiveListener takes the listening socket a helper sends on conn, which
// it closes; it gives up when the helper ends without sending one, or ctx
// ends.
func receiveListener(ctx context.Context, conn *os.File) (net.Listener, error) {
	c, err := net.FileConn(conn)
	conn.Close()
	if err != nil {
		return nil, fmt.Errorf("proxy socket: %w", err)
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return nil, bug(fmt.Errorf("proxy socket is a %T", c))
	}
	defer uc.Close()
	defer context.AfterFunc(ctx, func() { uc.Close() })()
	var b [1]byte
	oob := make([]byte, unix.CmsgSpace(4))
	_, oobn, flags, _, err := uc.ReadMsgUnix(b[:], oob)
	if err != nil {
		return nil, fmt.Errorf("receive the proxy's socket: %w", err)
	}
	var fds []int
	if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
		for _, m := range msgs {
			if got, err := unix.ParseUnixRights(&m); err == nil {
				fds = append(fds, got...)
			}
		}
	}
	if len(fds) != 1 || flags&unix.MSG_CTRUNC != 0 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		if len(fds) == 0 {
			return nil, errors.New("receive the proxy's socket: the helper ended without one")
		}
		return nil, bug(fmt.Errorf("receive the proxy's socket: %d descriptors", len(fds)))
	}
	unix.CloseOnExec(fds[0])
	f := os.NewFile(uintptr(fds[0]), "proxy")
	l, err := net.FileListener(f)
	f.Close()
	if err != nil {
		return nil, bug(fmt.Errorf("the proxy's socket: %w", err))
	}
	return l, nil
}

// proxyEnv returns the variables that send a command's HTTP(S) through the
// proxy, or none when the network is the host's.
func proxyEnv(p *policy.Policy) []string {
	if p.HostNetwork {
		return nil
	}
	return policy.ProxyEnv(proxyURL)
}

// lookupFunc resolves a host name for the proxy, as netproxy.Proxy.Lookup.
type lookupFunc = func(ctx context.Context, host string) ([]netip.Addr, error)
