package dbus

import (
	"bytes"
	"encoding/binary"
	"io"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// startTransientUnitArgs are the arguments of the call that
// testdata/start-transient-unit.body holds as sd-bus marshalled them:
//
//	busctl --address=unix:path=SOCKET call org.freedesktop.systemd1 /org/freedesktop/systemd1 \
//	  org.freedesktop.systemd1.Manager StartTransientUnit 'ssa(sv)a(sa(sv))' \
//	  nanosandbox-mcp-4242.scope fail 4 Description s "nanosandbox-mcp 4242" PIDs au 1 4242 \
//	  Delegate b true CollectMode s inactive-or-failed 0
//
// (systemd 252, recorded by a listener that answered the authentication).
var startTransientUnitArgs = []any{
	"nanosandbox-mcp-4242.scope", "fail",
	[]any{
		[]any{"Description", Variant{"s", "nanosandbox-mcp 4242"}},
		[]any{"PIDs", Variant{"au", []any{uint32(4242)}}},
		[]any{"Delegate", Variant{"b", true}},
		[]any{"CollectMode", Variant{"s", "inactive-or-failed"}},
	},
	[]any{},
}

// TestMarshalAsSDBus compares our marshalling with another implementation's.
func TestMarshalAsSDBus(t *testing.T) {
	want, err := os.ReadFile("testdata/start-transient-unit.body")
	if err != nil {
		t.Fatal(err)
	}
	got, err := Marshal("ssa(sv)a(sa(sv))", startTransientUnitArgs...)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("Marshal:\n got %x\nwant %x", got, want)
	}
	args, err := Unmarshal("ssa(sv)a(sa(sv))", want)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(startTransientUnitArgs, args); diff != "" {
		t.Errorf("Unmarshal (-want +got):\n%s", diff)
	}
}

// TestHelloLayout checks a whole message against the layout the
// specification gives, written out by hand.
func TestHelloLayout(t *testing.T) {
	m, err := NewCall("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "Hello", "")
	if err != nil {
		t.Fatal(err)
	}
	m.Serial = 7
	got, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var want []byte
	pad := func(n int) {
		for len(want)%n != 0 {
			want = append(want, 0)
		}
	}
	str := func(s string) {
		pad(4)
		want = binary.LittleEndian.AppendUint32(want, uint32(len(s)))
		want = append(append(want, s...), 0)
	}
	field := func(code byte, sig byte, s string) {
		pad(8)
		want = append(want, code, 1, sig, 0)
		str(s)
	}
	want = append(want, 'l', 1, 0, 1, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0) // fields' length at 12
	field(1, 'o', "/org/freedesktop/DBus")
	field(2, 's', "org.freedesktop.DBus")
	field(3, 's', "Hello")
	field(6, 's', "org.freedesktop.DBus")
	binary.LittleEndian.PutUint32(want[12:], uint32(len(want)-16))
	pad(8)
	if !bytes.Equal(got, want) {
		t.Errorf("Hello:\n got %x\nwant %x", got, want)
	}
	back, err := ReadMessage(bytes.NewReader(got))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(m, back); diff != "" {
		t.Errorf("read back (-want +got):\n%s", diff)
	}
}

func TestRoundTrip(t *testing.T) {
	for _, tt := range []struct {
		sig    Signature
		values []any
	}{
		{"ybnqiuxtdh", []any{byte(255), true, int16(-2), uint16(65535), int32(-3), uint32(4), int64(-5), uint64(6), 1.5, uint32(0)}},
		{"sog", []any{"héllo", ObjectPath("/a/b_1"), Signature("a{sv}")}},
		{"yt", []any{byte(1), uint64(1) << 63}}, // padding before the uint64
		{"ay", []any{[]byte{1, 2, 3}}},
		{"ayy", []any{[]byte{}, byte(9)}},
		{"at", []any{[]any{}}}, // empty, but padded to its element's boundary
		{"yat", []any{byte(1), []any{uint64(2), uint64(3)}}},
		{"a{sv}", []any{[]any{[]any{"k", Variant{"i", int32(1)}}, []any{"l", Variant{"as", []any{"x", "y"}}}}}},
		{"(y(sv))", []any{[]any{byte(1), []any{"a", Variant{"v", Variant{"b", false}}}}}},
		{"aay", []any{[]any{[]byte("ab"), []byte{}}}},
		{"d", []any{math.Inf(-1)}},
	} {
		t.Run(string(tt.sig), func(t *testing.T) {
			b, err := Marshal(tt.sig, tt.values...)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Unmarshal(tt.sig, b)
			if err != nil {
				t.Fatalf("Unmarshal %x: %v", b, err)
			}
			if diff := cmp.Diff(tt.values, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestMarshalRefuses(t *testing.T) {
	for _, tt := range []struct {
		name   string
		sig    Signature
		values []any
		want   string
	}{
		{"wrong Go type", "u", []any{1}, "int is not a value of type"},
		{"too few values", "ss", []any{"a"}, "2 types, and 1 values"},
		{"bad path", "o", []any{ObjectPath("/a/")}, "invalid object path"},
		{"NUL in a string", "s", []any{"a\x00b"}, "not valid UTF-8 without NUL"},
		{"bad variant signature", "v", []any{Variant{"ss", "a"}}, "not one complete type"},
		{"bad signature", "a", nil, "ends inside a type"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Marshal(tt.sig, tt.values...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error with %q", err, tt.want)
			}
		})
	}
}

func TestSignatures(t *testing.T) {
	for _, tt := range []struct {
		sig  string
		want string // "" if valid
	}{
		{"", ""},
		{"ssa(sv)a(sa(sv))", ""},
		{"a{sv}", ""},
		{"a{s}", "unexpected '}'"},
		{"a{sss}", "one key and one value"},
		{"a{vs}", "key must be a basic type"},
		{"{sv}", "unexpected"},
		{"()", "empty struct"},
		{"(s", "unclosed struct"},
		{"a", "ends inside a type"},
		{"z", "unexpected"},
		{strings.Repeat("a", 33) + "y", "arrays nested too deeply"},
		{strings.Repeat("(", 33) + "y" + strings.Repeat(")", 33), "structs nested too deeply"},
		{strings.Repeat("a", 32) + "y", ""},
		{strings.Repeat("y", 256), "signature of 256 bytes"},
	} {
		_, err := splitSignature(Signature(tt.sig))
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%q: got %v, want %q", tt.sig, err, tt.want)
		}
	}
}

func TestUnmarshalRefuses(t *testing.T) {
	u32 := func(n uint32) []byte { return binary.LittleEndian.AppendUint32(nil, n) }
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	for _, tt := range []struct {
		name string
		sig  Signature
		body []byte
		want string
	}{
		{"short", "u", []byte{1, 2}, "ends early"},
		{"nonzero padding", "yu", cat([]byte{1, 0, 1, 0}, u32(1)), "padding is not zero"},
		{"boolean 2", "b", u32(2), "boolean other than 0 or 1"},
		{"string without NUL", "s", cat(u32(1), []byte("ab")), "without its NUL"},
		{"string past the end", "s", cat(u32(100), []byte("ab\x00")), "ends early"},
		{"invalid UTF-8", "s", cat(u32(1), []byte{0xff, 0}), "not valid UTF-8"},
		{"NUL inside", "s", cat(u32(1), []byte{0, 0}), "not valid UTF-8 without NUL"},
		{"bad path", "o", cat(u32(2), []byte("//\x00")), "invalid object path"},
		{"bad signature", "g", []byte{1, '(', 0}, "unclosed struct"},
		{"variant of two types", "v", []byte{2, 'y', 'y', 0, 1, 1}, "not one complete type"},
		{"array past the end", "au", cat(u32(8), u32(1)), "ends early"},
		{"element past the array", "au", cat(u32(2), u32(1)), "runs past the array's end"},
		{"huge array", "ay", u32(1 << 27), "array of"},
		{"trailing bytes", "y", []byte{1, 2}, "1 bytes after"},
		{"variants nested too deeply", "v", bytes.Repeat([]byte{1, 'v', 0}, 70), "nested too deeply"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Unmarshal(tt.sig, tt.body)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error with %q", err, tt.want)
			}
		})
	}
}

// message marshals m with serial 1, or fails the test.
func message(t testing.TB, m *Message) []byte {
	t.Helper()
	if m.Serial == 0 {
		m.Serial = 1
	}
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func jobRemoved(t testing.TB) *Message {
	m, err := NewSignal("/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager", "JobRemoved", "uoss",
		uint32(42), ObjectPath("/org/freedesktop/systemd1/job/42"), "nanosandbox-mcp-1.scope", "done")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestReadMessage(t *testing.T) {
	sig := jobRemoved(t)
	sig.Sender = ":1.0"
	got, err := ReadMessage(bytes.NewReader(message(t, sig)))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(sig, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	// Big-endian, as a peer on another machine may send.
	be := jobRemoved(t)
	be.BigEndian = true
	be.Body = nil
	var e encoder
	e.order = binary.BigEndian
	if err := e.values("uoss", []any{uint32(42), ObjectPath("/j/42"), "u", "done"}); err != nil {
		t.Fatal(err)
	}
	be.Body = e.b
	got, err = ReadMessage(bytes.NewReader(message(t, be)))
	if err != nil {
		t.Fatal(err)
	}
	args, err := got.Args()
	if err != nil || !got.BigEndian || args[0] != uint32(42) || args[3] != "done" {
		t.Errorf("big-endian: got %+v %v %v", got, args, err)
	}

	// Read one after another from a stream.
	stream := append(message(t, jobRemoved(t)), message(t, jobRemoved(t))...)
	r := bytes.NewReader(stream)
	for i := 0; i < 2; i++ {
		if _, err := ReadMessage(r); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
	}
	if _, err := ReadMessage(r); err != io.EOF {
		t.Errorf("at the end: got %v, want io.EOF", err)
	}
}

func TestReadMessageRefuses(t *testing.T) {
	good := func() []byte { return message(t, jobRemoved(t)) }
	set := func(b []byte, at int, v ...byte) []byte { copy(b[at:], v); return b }
	withField := func(code byte, sig Signature, v any) []byte {
		m := jobRemoved(t)
		m.Serial = 1
		b, err := m.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		// Rebuild the header with one more field.
		d := decoder{b: b, pos: 12, order: binary.LittleEndian}
		fields, err := d.value("a(yv)")
		if err != nil {
			t.Fatal(err)
		}
		e := encoder{b: append([]byte{}, b[:12]...), order: binary.LittleEndian}
		if err := e.value("a(yv)", append(fields.([]any), []any{code, Variant{sig, v}})); err != nil {
			t.Fatal(err)
		}
		e.align(8)
		return append(e.b, m.Body...)
	}
	noPath := jobRemoved(t)
	noPath.Path = ""
	noPath.Serial = 1
	for _, tt := range []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "EOF"},
		{"cut short", good()[:40], "unexpected EOF"},
		{"byte order", set(good(), 0, 'x'), "unknown byte order"},
		{"version", set(good(), 3, 2), "protocol version 2"},
		{"serial 0", set(good(), 8, 0), "without a serial"},
		{"too large", set(good(), 4, 0, 0, 0, 1), "message of"},
		{"field twice", withField(fieldMember, "s", "x"), "header field 3 twice"},
		{"field of the wrong type", withField(fieldReplySerial, "s", "x"), "of type \"s\", want \"u\""},
		{"file descriptors", withField(fieldUnixFDs, "u", uint32(1)), "file descriptors"},
		{"signal without a path", func() []byte {
			b := message(t, &Message{Type: MethodReturn, ReplySerial: 1, Serial: 1})
			return set(b, 1, byte(Signal))
		}(), "without a path"},
		{"body without signature", func() []byte {
			b := message(t, &Message{Type: MethodReturn, ReplySerial: 1, Serial: 1})
			b = set(b, 4, 1)
			return append(b, 0)
		}(), "body and no signature"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadMessage(bytes.NewReader(tt.b))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error with %q", err, tt.want)
			}
		})
	}
	// An unknown field is ignored, as the specification asks.
	if _, err := ReadMessage(bytes.NewReader(withField(200, "ay", []byte{1}))); err != nil {
		t.Errorf("an unknown field: %v", err)
	}
	if _, err := noPath.Marshal(); err == nil {
		t.Errorf("Marshal of a signal without a path: no error")
	}
}
