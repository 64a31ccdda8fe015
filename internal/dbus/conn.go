package dbus

import (
	"bufio"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// maxQueued bounds the messages a Conn keeps while it waits for a reply
// (signals and calls a later Wait may want).
const maxQueued = 1024

// Conn is a connection to a bus or a peer. It is not safe for concurrent use.
type Conn struct {
	c      net.Conn
	r      *bufio.Reader
	serial uint32
	queue  []*Message
	// Name is the unique name the bus gave this connection ("" on a
	// connection to a peer).
	Name string
}

// Dial connects to the first address of a D-Bus address list
// ("unix:path=/run/user/1000/bus;unix:abstract=...") that takes a
// connection, signs in as this process's effective uid (SASL EXTERNAL),
// and, on a bus, says Hello. Only unix addresses are supported. When ctx
// ends, so does whatever Dial is waiting for.
func Dial(ctx context.Context, address string, bus bool) (*Conn, error) {
	paths, err := parseAddress(address)
	if err != nil {
		return nil, err
	}
	var errs []string
	for _, p := range paths {
		var d net.Dialer
		nc, err := d.DialContext(ctx, "unix", p)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		c := &Conn{c: nc, r: bufio.NewReader(nc)}
		if err := c.start(ctx, bus); err != nil {
			nc.Close()
			return nil, err
		}
		return c, nil
	}
	return nil, errors.New(strings.Join(errs, "; ")) // one line, for --check
}

// parseAddress returns the sockets a D-Bus address list names, abstract
// ones with a leading "@".
func parseAddress(address string) ([]string, error) {
	var paths []string
	var unsupported []string
	for _, a := range strings.Split(address, ";") {
		if a == "" {
			continue
		}
		transport, kvs, _ := strings.Cut(a, ":")
		if transport != "unix" {
			unsupported = append(unsupported, transport)
			continue
		}
		for _, kv := range strings.Split(kvs, ",") {
			k, v, _ := strings.Cut(kv, "=")
			v, err := unescape(v)
			if err != nil {
				return nil, fmt.Errorf("dbus: address %q: %w", a, err)
			}
			switch k {
			case "path":
				paths = append(paths, v)
			case "abstract":
				paths = append(paths, "@"+v)
			}
		}
	}
	if len(paths) == 0 {
		if len(unsupported) > 0 {
			return nil, fmt.Errorf("dbus: address %q: only unix sockets are supported, not %s", address, strings.Join(unsupported, ", "))
		}
		return nil, fmt.Errorf("dbus: address %q names no unix socket", address)
	}
	return paths, nil
}

// unescape undoes the %XX escaping of address values.
func unescape(s string) (string, error) {
	if !strings.Contains(s, "%") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", fmt.Errorf("bad escape in %q", s)
		}
		x, err := hex.DecodeString(s[i+1 : i+3])
		if err != nil {
			return "", fmt.Errorf("bad escape in %q", s)
		}
		b.WriteByte(x[0])
		i += 2
	}
	return b.String(), nil
}

// start signs in and says Hello.
func (c *Conn) start(ctx context.Context, bus bool) error {
	stop := c.bound(ctx)
	defer stop()
	uid := hex.EncodeToString([]byte(strconv.Itoa(os.Geteuid())))
	if _, err := c.c.Write([]byte("\x00AUTH EXTERNAL " + uid + "\r\n")); err != nil {
		return c.fail(ctx, "auth", err)
	}
	line, err := c.line()
	if err != nil {
		return c.fail(ctx, "auth", err)
	}
	if !strings.HasPrefix(line, "OK ") {
		return fmt.Errorf("dbus: auth: EXTERNAL as uid %d refused: %q", os.Geteuid(), line)
	}
	if _, err := c.c.Write([]byte("BEGIN\r\n")); err != nil {
		return c.fail(ctx, "auth", err)
	}
	if !bus {
		return nil
	}
	hello, _ := NewCall("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "Hello", "")
	reply, err := c.Call(ctx, hello)
	if e := (*Error)(nil); errors.As(err, &e) {
		return fmt.Errorf("dbus: Hello: %w", err)
	}
	if err != nil {
		return err
	}
	args, err := reply.Args()
	if err != nil || len(args) != 1 {
		return fmt.Errorf("dbus: Hello: a reply of type %q", reply.Signature)
	}
	c.Name, _ = args[0].(string)
	return nil
}

// line reads one line of the authentication exchange.
func (c *Conn) line() (string, error) {
	var b []byte
	for {
		ch, err := c.r.ReadByte()
		if err != nil {
			return "", err
		}
		b = append(b, ch)
		if len(b) >= 2 && b[len(b)-2] == '\r' && ch == '\n' {
			return string(b[:len(b)-2]), nil
		}
		if len(b) > 1024 {
			return "", errors.New("an authentication line of over 1 KiB")
		}
	}
}

// bound makes the connection's reads and writes end when ctx does (after
// it, so that fail finds ctx's error); stop undoes it.
func (c *Conn) bound(ctx context.Context) (stop func()) {
	fired := make(chan struct{})
	cancel := context.AfterFunc(ctx, func() {
		c.c.SetDeadline(time.Unix(1, 0))
		close(fired)
	})
	return func() {
		if !cancel() {
			<-fired // it started: let it end before the deadline is lifted
		}
		c.c.SetDeadline(time.Time{})
	}
}

// fail says why op failed: ctx's end, if that is what interrupted it.
func (c *Conn) fail(ctx context.Context, op string, err error) error {
	if ctx.Err() != nil {
		err = ctx.Err()
	}
	return fmt.Errorf("dbus: %s: %w", op, err)
}

// Send numbers m if it has no serial yet, and writes it.
func (c *Conn) Send(m *Message) error {
	if m.Serial == 0 {
		c.serial++
		m.Serial = c.serial
	}
	b, err := m.Marshal()
	if err != nil {
		return err
	}
	_, err = c.c.Write(b)
	return err
}

// Call sends m and waits for its reply. An error reply is an *Error.
// Other messages that arrive meanwhile, but replies, are kept for Wait.
func (c *Conn) Call(ctx context.Context, m *Message) (*Message, error) {
	stop := c.bound(ctx)
	defer stop()
	if err := c.Send(m); err != nil {
		return nil, c.fail(ctx, m.Member, err)
	}
	for {
		r, err := ReadMessage(c.r)
		if err != nil {
			return nil, c.fail(ctx, m.Member, err)
		}
		switch {
		case (r.Type == MethodReturn || r.Type == ErrorReply) && r.ReplySerial == m.Serial:
			if r.Type == ErrorReply {
				return nil, replyError(r)
			}
			return r, nil
		case r.Type == Signal || r.Type == MethodCall:
			if len(c.queue) >= maxQueued {
				return nil, fmt.Errorf("dbus: %s: over %d messages arrived before its reply", m.Member, maxQueued)
			}
			c.queue = append(c.queue, r)
		}
	}
}

// Wait returns the first signal or method call, kept or arriving, that
// match accepts.
func (c *Conn) Wait(ctx context.Context, match func(*Message) bool) (*Message, error) {
	for i, m := range c.queue {
		if match(m) {
			c.queue = append(c.queue[:i], c.queue[i+1:]...)
			return m, nil
		}
	}
	stop := c.bound(ctx)
	defer stop()
	for {
		m, err := ReadMessage(c.r)
		if err != nil {
			return nil, c.fail(ctx, "wait", err)
		}
		if (m.Type == Signal || m.Type == MethodCall) && match(m) {
			return m, nil
		}
	}
}

// Close closes the connection.
func (c *Conn) Close() error { return c.c.Close() }

// UnixAddress is the D-Bus address of the unix socket at path, with every
// byte but those the specification leaves optional escaped.
func UnixAddress(path string) string {
	var b strings.Builder
	b.WriteString("unix:path=")
	for i := 0; i < len(path); i++ {
		c := path[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-_/.\\*", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02x", c)
		}
	}
	return b.String()
}
