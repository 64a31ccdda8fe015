// Package dbustest runs a fake D-Bus bus, or a fake peer, for tests of
// clients: the server side of the authentication and of the wire protocol,
// on a unix socket in the test's temporary directory. It imports the
// standard library and dbus only.
package dbustest

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/nanosandbox/nanosandbox-mcp/internal/dbus"
)

// Handler is given each message a client sends that the server does not
// answer itself. It runs on the connection's goroutine, and may send
// replies and signals through c. A nil Handler answers every method call
// with an UnknownMethod error.
type Handler func(c *Conn, m *dbus.Message)

// Server is a fake bus or peer.
type Server struct {
	// Addr is its D-Bus address, "unix:path=...".
	Addr string
	bus  bool
	h    Handler
	ln   net.Listener

	mu      sync.Mutex
	matches []string
	clients int
}

// NewBus starts a fake bus until the test ends. It answers Hello (with a
// unique name) and AddMatch itself, as a bus does, and passes every other
// message to h.
func NewBus(t testing.TB, h Handler) *Server { return start(t, true, h) }

// NewPeer starts a fake peer until the test ends, as systemd's private
// socket is one: a call of Hello gets an UnknownMethod error, and every
// other message goes to h.
func NewPeer(t testing.TB, h Handler) *Server { return start(t, false, h) }

func start(t testing.TB, bus bool, h Handler) *Server {
	t.Helper()
	dir, err := os.MkdirTemp("", "dbustest")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "bus")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Addr: "unix:path=" + path, bus: bus, h: h, ln: ln}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
		os.RemoveAll(dir)
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer nc.Close()
				s.serve(nc)
			}()
		}
	}()
	return s
}

// Matches returns the match rules clients added.
func (s *Server) Matches() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.matches)
}

// Conn is the server's side of one client's connection.
type Conn struct {
	nc     net.Conn
	mu     sync.Mutex
	serial uint32
	// Name is the client's unique name on a bus, "" on a peer.
	Name string
}

// Send numbers m and writes it to the client, as from the bus itself (or
// the peer).
func (c *Conn) Send(m *dbus.Message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.serial++
	m.Serial = c.serial
	b, err := m.Marshal()
	if err != nil {
		return err
	}
	_, err = c.nc.Write(b)
	return err
}

// Reply sends the reply to m.
func (c *Conn) Reply(m *dbus.Message, sig dbus.Signature, args ...any) error {
	r, err := dbus.NewReply(m, sig, args...)
	if err != nil {
		return err
	}
	return c.Send(r)
}

func (s *Server) serve(nc net.Conn) {
	r := bufio.NewReader(nc)
	if !s.auth(nc, r) {
		return
	}
	c := &Conn{nc: nc}
	for {
		m, err := dbus.ReadMessage(r)
		if err != nil {
			return
		}
		if s.bus {
			m.Sender = c.Name
		}
		switch {
		case m.Member == "Hello" && m.Interface == "org.freedesktop.DBus":
			if !s.bus {
				c.Send(dbus.NewError(m, "org.freedesktop.DBus.Error.UnknownMethod", "Unknown method Hello"))
				continue
			}
			s.mu.Lock()
			s.clients++
			c.Name = fmt.Sprintf(":1.%d", s.clients)
			s.mu.Unlock()
			m.Sender = c.Name
			c.Reply(m, "s", c.Name)
		case s.bus && m.Member == "AddMatch" && m.Interface == "org.freedesktop.DBus":
			if args, err := m.Args(); err == nil && len(args) == 1 {
				s.mu.Lock()
				s.matches = append(s.matches, args[0].(string))
				s.mu.Unlock()
			}
			c.Reply(m, "")
		case s.h != nil:
			s.h(c, m)
		case m.Type == dbus.MethodCall:
			c.Send(dbus.NewError(m, "org.freedesktop.DBus.Error.UnknownMethod", "Unknown method "+m.Member))
		}
	}
}

// auth speaks the server side of SASL EXTERNAL, with the identity given at
// once or after a DATA challenge, and accepts only this process's uid.
func (s *Server) auth(nc net.Conn, r *bufio.Reader) bool {
	if b, err := r.ReadByte(); err != nil || b != 0 {
		return false
	}
	ok := func(id string) string {
		b, err := hex.DecodeString(id)
		if id != "" && (err != nil || string(b) != strconv.Itoa(os.Geteuid())) {
			return "REJECTED EXTERNAL\r\n"
		}
		return "OK 0123456789abcdef0123456789abcdef\r\n"
	}
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return false
		}
		line = strings.TrimSuffix(line, "\r\n")
		var answer string
		switch {
		case line == "AUTH EXTERNAL":
			answer = "DATA\r\n"
		case strings.HasPrefix(line, "AUTH EXTERNAL "):
			answer = ok(strings.TrimPrefix(line, "AUTH EXTERNAL "))
		case line == "DATA" || strings.HasPrefix(line, "DATA "):
			answer = ok(strings.TrimPrefix(strings.TrimPrefix(line, "DATA"), " "))
		case line == "BEGIN":
			return true
		case strings.HasPrefix(line, "AUTH"):
			answer = "REJECTED EXTERNAL\r\n"
		default:
			answer = "ERROR\r\n"
		}
		if _, err := nc.Write([]byte(answer)); err != nil {
			return false
		}
	}
}
