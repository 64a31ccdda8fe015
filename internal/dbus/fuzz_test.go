package dbus

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzReadMessage reads fuzzed bytes as a message. Nothing may panic; a
// message read must marshal back to one that reads the same, and a body
// that decodes must encode back to the same bytes (padding is checked to be
// zero, so the encoding is canonical). The seeds in testdata/fuzz are the
// messages this client meets (Hello and its reply, the call for a scope as
// this package and as sd-bus marshal it, its reply, JobRemoved in both byte
// orders, an error, PropertiesChanged).
func FuzzReadMessage(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ReadMessage(bytes.NewReader(b))
		if err != nil {
			return
		}
		again, err := m.Marshal()
		if err != nil {
			t.Fatalf("%+v read, and does not marshal: %v", m, err)
		}
		back, err := ReadMessage(bytes.NewReader(again))
		if err != nil {
			t.Fatalf("%+v marshalled to %x, which does not read: %v", m, again, err)
		}
		if diff := cmp.Diff(m, back); diff != "" {
			t.Fatalf("read back (-first +second):\n%s", diff)
		}
		args, err := m.Args()
		if err != nil {
			return
		}
		e := encoder{order: m.order()}
		if err := e.values(m.Signature, args); err != nil {
			t.Fatalf("%q %#v decoded, and does not encode: %v", m.Signature, args, err)
		}
		if !bytes.Equal(e.b, m.Body) {
			t.Fatalf("%q: body %x decoded to %#v, which encodes to %x", m.Signature, m.Body, args, e.b)
		}
	})
}
