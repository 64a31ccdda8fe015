package dbus_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nanosandbox/nanosandbox-mcp/internal/dbus"
	"github.com/nanosandbox/nanosandbox-mcp/internal/dbus/dbustest"
)

func call(t *testing.T, member string, sig dbus.Signature, args ...any) *dbus.Message {
	t.Helper()
	m, err := dbus.NewCall("org.example", "/org/example", "org.example.Test", member, sig, args...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// echo answers Echo with its arguments, Fail with an error, and Chatty
// with a signal before and after its reply.
func echo(c *dbustest.Conn, m *dbus.Message) {
	switch m.Member {
	case "Echo":
		args, _ := m.Args()
		c.Reply(m, m.Signature, args...)
	case "Fail":
		c.Send(dbus.NewError(m, "org.example.Error.Failed", "it failed"))
	case "Chatty":
		s, _ := dbus.NewSignal("/org/example", "org.example.Test", "Before", "s", "Before")
		c.Send(s)
		c.Reply(m, "")
		s, _ = dbus.NewSignal("/org/example", "org.example.Test", "After", "s", "After")
		c.Send(s)
	}
}

func dial(t *testing.T, addr string, bus bool) *dbus.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := dbus.Dial(ctx, addr, bus)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestCallOnABusAndAPeer(t *testing.T) {
	for _, tt := range []struct {
		name     string
		bus      bool
		start    func(testing.TB, dbustest.Handler) *dbustest.Server
		wantName string
	}{
		{"bus", true, dbustest.NewBus, ":1.1"},
		{"peer", false, dbustest.NewPeer, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.start(t, echo)
			c := dial(t, s.Addr, tt.bus)
			if c.Name != tt.wantName {
				t.Errorf("Name: got %q, want %q", c.Name, tt.wantName)
			}
			args := []any{"x", []any{[]any{"k", dbus.Variant{Sig: "u", Value: uint32(7)}}}}
			r, err := c.Call(context.Background(), call(t, "Echo", "sa{sv}", args...))
			if err != nil {
				t.Fatal(err)
			}
			got, err := r.Args()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(args, got); diff != "" {
				t.Errorf("Echo (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHelloOnAPeerFails(t *testing.T) {
	s := dbustest.NewPeer(t, echo)
	_, err := dbus.Dial(context.Background(), s.Addr, true)
	var e *dbus.Error
	if !errors.As(err, &e) || e.Name != "org.freedesktop.DBus.Error.UnknownMethod" {
		t.Errorf("got %v, want an UnknownMethod error", err)
	}
}

func TestErrorReply(t *testing.T) {
	s := dbustest.NewBus(t, echo)
	c := dial(t, s.Addr, true)
	_, err := c.Call(context.Background(), call(t, "Fail", ""))
	var e *dbus.Error
	if !errors.As(err, &e) || e.Name != "org.example.Error.Failed" || e.Message != "it failed" {
		t.Fatalf("got %#v, want org.example.Error.Failed", err)
	}
	if got, want := err.Error(), "org.example.Error.Failed: it failed"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestSignalsAroundAReply: a signal that arrives before the reply is kept,
// one after it is read when waited for.
func TestSignalsAroundAReply(t *testing.T) {
	s := dbustest.NewBus(t, echo)
	c := dial(t, s.Addr, true)
	if _, err := c.Call(context.Background(), call(t, "Chatty", "")); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"After", "Before"} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		m, err := c.Wait(ctx, func(m *dbus.Message) bool { return m.Member == want })
		cancel()
		if err != nil || m.Member != want {
			t.Errorf("Wait for %s: got %v %v", want, m, err)
		}
	}
}

func TestWaitEndsWithItsContext(t *testing.T) {
	s := dbustest.NewBus(t, echo)
	c := dial(t, s.Addr, true)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	began := time.Now()
	_, err := c.Wait(ctx, func(*dbus.Message) bool { return true })
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(began) > 5*time.Second {
		t.Errorf("got %v after %s, want the deadline", err, time.Since(began))
	}
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err = c.Wait(ctx, func(*dbus.Message) bool { return true })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want the cancellation", err)
	}
	// The connection still works.
	if _, err := c.Call(context.Background(), call(t, "Echo", "")); err != nil {
		t.Errorf("after a wait that ended: %v", err)
	}
}

func TestDialAddresses(t *testing.T) {
	s := dbustest.NewBus(t, echo)
	path := strings.TrimPrefix(s.Addr, "unix:path=")
	escaped := strings.ReplaceAll(path, "/", "%2f")
	missing := filepath.Join(t.TempDir(), "none")
	for _, tt := range []struct {
		name, addr, wantErr string
	}{
		{"plain", s.Addr, ""},
		{"with a guid", s.Addr + ",guid=0123456789abcdef0123456789abcdef", ""},
		{"escaped", "unix:path=" + escaped, ""},
		{"the second of a list", "unix:path=" + missing + ";" + s.Addr, ""},
		{"a missing socket", "unix:path=" + missing, "no such file or directory"},
		{"two, on one line", "unix:path=" + missing + ";unix:abstract=nsb-none", "no such file or directory; dial unix @nsb-none: connect: connection refused"},
		{"tcp", "tcp:host=localhost,port=1", "only unix sockets are supported, not tcp"},
		{"no socket", "unix:guid=1", "names no unix socket"},
		{"made by UnixAddress", dbus.UnixAddress(path), ""},
		{"bad escape", "unix:path=%zz", "bad escape"},
		{"cut escape", "unix:path=a%2", "bad escape"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := dbus.Dial(context.Background(), tt.addr, true)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				c.Close()
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), "\n") {
				t.Errorf("got %q, want an error on one line with %q", err, tt.wantErr)
			}
		})
	}
}

// fakeListener accepts one connection and runs serve on it.
func fakeListener(t *testing.T, serve func(net.Conn, *bufio.Reader)) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		serve(c, bufio.NewReader(c))
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return "unix:path=" + path
}

func TestDialFailures(t *testing.T) {
	readLine := func(r *bufio.Reader) string {
		r.ReadByte() // the NUL
		l, _ := r.ReadString('\n')
		return l
	}
	for _, tt := range []struct {
		name  string
		serve func(net.Conn, *bufio.Reader)
		want  string
	}{
		{"auth refused", func(c net.Conn, r *bufio.Reader) {
			readLine(r)
			c.Write([]byte("REJECTED EXTERNAL\r\n"))
		}, `refused: "REJECTED EXTERNAL"`},
		{"closed during auth", func(c net.Conn, r *bufio.Reader) { readLine(r) }, "EOF"},
		{"endless auth line", func(c net.Conn, r *bufio.Reader) {
			readLine(r)
			c.Write([]byte(strings.Repeat("x", 2000)))
		}, "over 1 KiB"},
		{"garbage after auth", func(c net.Conn, r *bufio.Reader) {
			readLine(r)
			c.Write([]byte("OK 0123\r\n"))
			r.ReadString('\n') // BEGIN
			c.Write([]byte("garbage garbage garbage\r\n"))
			io.Copy(io.Discard, r)
		}, "unknown byte order"},
		{"closed before Hello's reply", func(c net.Conn, r *bufio.Reader) {
			readLine(r)
			c.Write([]byte("OK 0123\r\n"))
			r.ReadString('\n')
		}, "Hello"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			addr := fakeListener(t, tt.serve)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, err := dbus.Dial(ctx, addr, true)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error with %q", err, tt.want)
			}
		})
	}
}

// TestDialTimesOut: a peer that never answers holds Dial no longer than its
// context.
func TestDialTimesOut(t *testing.T) {
	addr := fakeListener(t, func(c net.Conn, r *bufio.Reader) { io.Copy(io.Discard, r) })
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := dbus.Dial(ctx, addr, true)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got %v, want the deadline", err)
	}
}

func TestUIDInAuth(t *testing.T) {
	got := make(chan string, 1)
	addr := fakeListener(t, func(c net.Conn, r *bufio.Reader) {
		r.ReadByte()
		l, _ := r.ReadString('\n')
		got <- l
	})
	dbus.Dial(context.Background(), addr, false)
	// The uid's decimal digits in hex: uid 1000 is "31303030".
	want := fmt.Sprintf("AUTH EXTERNAL %x\r\n", strconv.Itoa(os.Geteuid()))
	if l := <-got; l != want {
		t.Errorf("got %q, want %q", l, want)
	}
}

func TestUnixAddress(t *testing.T) {
	for path, want := range map[string]string{
		"/run/user/1000/bus": "unix:path=/run/user/1000/bus",
		"/tmp/a b;c,d=%":     "unix:path=/tmp/a%20b%3bc%2cd%3d%25",
		"/tmp/\xff\\*":       "unix:path=/tmp/%ff\\*",
	} {
		if got := dbus.UnixAddress(path); got != want {
			t.Errorf("%q: got %q, want %q", path, got, want)
		}
	}
}
