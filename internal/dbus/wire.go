package dbus

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
)

// ObjectPath is a value of D-Bus type "o".
type ObjectPath string

// Signature is a value of D-Bus type "g", and the type of a message body.
type Signature string

// Variant is a value of D-Bus type "v": a value with its own signature.
type Variant struct {
	Sig   Signature
	Value any
}

// Go values by D-Bus type, both ways: y byte, b bool, n int16, q uint16,
// i int32, u and h uint32, x int64, t uint64, d float64, s string,
// o ObjectPath, g Signature, v Variant, ay []byte, any other array []any,
// a struct or a dict entry []any of its fields.

// Limits from the D-Bus specification.
const (
	maxArrayBytes   = 1 << 26
	maxSignature    = 255
	maxArrayDepth   = 32
	maxStructDepth  = 32
	maxNestingDepth = 64 // arrays, structs, dict entries and variants together
)

var errShort = errors.New("dbus: message ends early")

// alignment is the boundary a value of the type starting with c begins on.
func alignment(c byte) int {
	switch c {
	case 'n', 'q':
		return 2
	case 'b', 'i', 'u', 'h', 's', 'o', 'a':
		return 4
	case 'x', 't', 'd', '(', '{':
		return 8
	}
	return 1 // y, g, v
}

func isBasic(c byte) bool { return strings.IndexByte("ybnqiuxtdhsog", c) >= 0 }

// firstType returns the length of the single complete type that sig starts
// with; arrays and structs count the containers it is already inside.
func firstType(sig string, arrays, structs int) (int, error) {
	if sig == "" {
		return 0, errors.New("dbus: signature ends inside a type")
	}
	switch c := sig[0]; {
	case isBasic(c) || c == 'v':
		return 1, nil
	case c == 'a':
		if arrays >= maxArrayDepth {
			return 0, errors.New("dbus: arrays nested too deeply")
		}
		if len(sig) > 1 && sig[1] == '{' {
			if structs >= maxStructDepth {
				return 0, errors.New("dbus: structs nested too deeply")
			}
			if len(sig) < 3 || !isBasic(sig[2]) {
				return 0, fmt.Errorf("dbus: signature %q: a dict entry's key must be a basic type", sig)
			}
			n, err := firstType(sig[3:], arrays+1, structs+1)
			if err != nil {
				return 0, err
			}
			if 3+n >= len(sig) || sig[3+n] != '}' {
				return 0, fmt.Errorf("dbus: signature %q: a dict entry holds one key and one value", sig)
			}
			return 3 + n + 1, nil
		}
		n, err := firstType(sig[1:], arrays+1, structs)
		return 1 + n, err
	case c == '(':
		if structs >= maxStructDepth {
			return 0, errors.New("dbus: structs nested too deeply")
		}
		for i := 1; i < len(sig); {
			if sig[i] == ')' {
				if i == 1 {
					return 0, errors.New("dbus: empty struct")
				}
				return i + 1, nil
			}
			n, err := firstType(sig[i:], arrays, structs+1)
			if err != nil {
				return 0, err
			}
			i += n
		}
		return 0, fmt.Errorf("dbus: signature %q: unclosed struct", sig)
	}
	return 0, fmt.Errorf("dbus: signature %q: unexpected %q", sig, sig[0])
}

// splitSignature splits sig into its complete types.
func splitSignature(sig Signature) ([]string, error) {
	if len(sig) > maxSignature {
		return nil, fmt.Errorf("dbus: signature of %d bytes", len(sig))
	}
	var types []string
	for s := string(sig); s != ""; {
		n, err := firstType(s, 0, 0)
		if err != nil {
			return nil, err
		}
		types = append(types, s[:n])
		s = s[n:]
	}
	return types, nil
}

// validPath reports whether p is a valid object path.
func validPath(p string) bool {
	if p == "/" {
		return true
	}
	if !strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") {
		return false
	}
	for _, elem := range strings.Split(p[1:], "/") {
		if elem == "" {
			return false
		}
		for i := 0; i < len(elem); i++ {
			c := elem[i]
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
				return false
			}
		}
	}
	return true
}

func validString(s string) bool { return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 }

// Marshal encodes values of the types in sig, in little-endian order, as a
// message body starting on an 8-byte boundary.
func Marshal(sig Signature, values ...any) ([]byte, error) {
	e := encoder{order: binary.LittleEndian}
	if err := e.values(sig, values); err != nil {
		return nil, err
	}
	return e.b, nil
}

// byteOrder is what encoding/binary's LittleEndian and BigEndian are.
type byteOrder interface {
	binary.ByteOrder
	binary.AppendByteOrder
}

// Unmarshal decodes a little-endian message body of the types in sig into
// Go values.
func Unmarshal(sig Signature, body []byte) ([]any, error) {
	return unmarshal(binary.LittleEndian, sig, body)
}

func unmarshal(order byteOrder, sig Signature, body []byte) ([]any, error) {
	types, err := splitSignature(sig)
	if err != nil {
		return nil, err
	}
	d := decoder{b: body, order: order}
	var out []any
	for _, t := range types {
		v, err := d.value(t)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if d.pos != len(body) {
		return nil, fmt.Errorf("dbus: %d bytes after the body's values", len(body)-d.pos)
	}
	return out, nil
}

type encoder struct {
	b     []byte
	order byteOrder
	depth int
}

func (e *encoder) align(n int) {
	for len(e.b)%n != 0 {
		e.b = append(e.b, 0)
	}
}

func (e *encoder) u32(v uint32) {
	e.align(4)
	e.b = e.order.AppendUint32(e.b, v)
}

func (e *encoder) values(sig Signature, values []any) error {
	types, err := splitSignature(sig)
	if err != nil {
		return err
	}
	if len(types) != len(values) {
		return fmt.Errorf("dbus: signature %q has %d types, and %d values were given", sig, len(types), len(values))
	}
	for i, t := range types {
		if err := e.value(t, values[i]); err != nil {
			return err
		}
	}
	return nil
}

// value appends v as a value of the single complete type t.
func (e *encoder) value(t string, v any) error {
	bad := func() error { return fmt.Errorf("dbus: %T is not a value of type %q", v, t) }
	e.align(alignment(t[0]))
	var ok bool
	switch t[0] {
	case 'y':
		var x byte
		x, ok = v.(byte)
		e.b = append(e.b, x)
	case 'b':
		var x bool
		x, ok = v.(bool)
		n := uint32(0)
		if x {
			n = 1
		}
		e.b = e.order.AppendUint32(e.b, n)
	case 'n':
		var x int16
		x, ok = v.(int16)
		e.b = e.order.AppendUint16(e.b, uint16(x))
	case 'q':
		var x uint16
		x, ok = v.(uint16)
		e.b = e.order.AppendUint16(e.b, x)
	case 'i':
		var x int32
		x, ok = v.(int32)
		e.b = e.order.AppendUint32(e.b, uint32(x))
	case 'u', 'h':
		var x uint32
		x, ok = v.(uint32)
		e.b = e.order.AppendUint32(e.b, x)
	case 'x':
		var x int64
		x, ok = v.(int64)
		e.b = e.order.AppendUint64(e.b, uint64(x))
	case 't':
		var x uint64
		x, ok = v.(uint64)
		e.b = e.order.AppendUint64(e.b, x)
	case 'd':
		var x float64
		x, ok = v.(float64)
		e.b = e.order.AppendUint64(e.b, math.Float64bits(x))
	case 's', 'o':
		var x string
		if t[0] == 's' {
			x, ok = v.(string)
		} else {
			var p ObjectPath
			p, ok = v.(ObjectPath)
			x = string(p)
			if ok && !validPath(x) {
				return fmt.Errorf("dbus: invalid object path %q", x)
			}
		}
		if ok && !validString(x) {
			return fmt.Errorf("dbus: string %q is not valid UTF-8 without NUL", x)
		}
		e.u32(uint32(len(x)))
		e.b = append(append(e.b, x...), 0)
	case 'g':
		var x Signature
		if x, ok = v.(Signature); ok {
			if _, err := splitSignature(x); err != nil {
				return err
			}
			e.b = append(append(append(e.b, byte(len(x))), x...), 0)
		}
	case 'v':
		var x Variant
		if x, ok = v.(Variant); ok {
			if n, err := firstType(string(x.Sig), 0, 0); err != nil || n != len(x.Sig) {
				return fmt.Errorf("dbus: variant signature %q is not one complete type", x.Sig)
			}
			e.b = append(append(append(e.b, byte(len(x.Sig))), x.Sig...), 0)
			return e.nested(func() error { return e.value(string(x.Sig), x.Value) })
		}
	case 'a':
		return e.nested(func() error { return e.array(t[1:], v) })
	case '(', '{':
		var fields []any
		if fields, ok = v.([]any); ok {
			return e.nested(func() error { return e.values(Signature(t[1:len(t)-1]), fields) })
		}
	}
	if !ok {
		return bad()
	}
	return nil
}

func (e *encoder) nested(f func() error) error {
	if e.depth >= maxNestingDepth {
		return errors.New("dbus: values nested too deeply")
	}
	e.depth++
	defer func() { e.depth-- }()
	return f()
}

// array appends an array of elem: its length, the padding to its first
// element (there even when it is empty), and its elements.
func (e *encoder) array(elem string, v any) error {
	e.u32(0)
	at := len(e.b) - 4
	e.align(alignment(elem[0]))
	start := len(e.b)
	if elem == "y" {
		b, ok := v.([]byte)
		if !ok {
			return fmt.Errorf("dbus: %T is not a value of type \"ay\"", v)
		}
		e.b = append(e.b, b...)
	} else {
		items, ok := v.([]any)
		if !ok {
			return fmt.Errorf("dbus: %T is not a value of type %q", v, "a"+elem)
		}
		for _, item := range items {
			if err := e.value(elem, item); err != nil {
				return err
			}
		}
	}
	n := len(e.b) - start
	if n > maxArrayBytes {
		return fmt.Errorf("dbus: array of %d bytes", n)
	}
	e.order.PutUint32(e.b[at:], uint32(n))
	return nil
}

type decoder struct {
	b     []byte
	pos   int
	order byteOrder
	depth int
}

// align skips the padding before a value aligned on n, which must be zero.
func (d *decoder) align(n int) error {
	for d.pos%n != 0 {
		if d.pos >= len(d.b) {
			return errShort
		}
		if d.b[d.pos] != 0 {
			return errors.New("dbus: padding is not zero")
		}
		d.pos++
	}
	return nil
}

func (d *decoder) read(n int) ([]byte, error) {
	if n < 0 || n > len(d.b)-d.pos {
		return nil, errShort
	}
	b := d.b[d.pos : d.pos+n]
	d.pos += n
	return b, nil
}

func (d *decoder) u32() (uint32, error) {
	if err := d.align(4); err != nil {
		return 0, err
	}
	b, err := d.read(4)
	if err != nil {
		return 0, err
	}
	return d.order.Uint32(b), nil
}

// text reads what follows a length: n bytes and a NUL.
func (d *decoder) text(n int) (string, error) {
	b, err := d.read(n + 1)
	if err != nil {
		return "", err
	}
	if b[n] != 0 {
		return "", errors.New("dbus: string without its NUL")
	}
	s := string(b[:n])
	if !validString(s) {
		return "", fmt.Errorf("dbus: string %q is not valid UTF-8 without NUL", s)
	}
	return s, nil
}

func (d *decoder) signature() (Signature, error) {
	n, err := d.read(1)
	if err != nil {
		return "", err
	}
	s, err := d.text(int(n[0]))
	if err != nil {
		return "", err
	}
	if _, err := splitSignature(Signature(s)); err != nil {
		return "", err
	}
	return Signature(s), nil
}

// value reads a value of the single complete type t.
func (d *decoder) value(t string) (any, error) {
	if err := d.align(alignment(t[0])); err != nil {
		return nil, err
	}
	fixed := func(n int) ([]byte, error) { return d.read(n) }
	switch t[0] {
	case 'y':
		b, err := fixed(1)
		if err != nil {
			return nil, err
		}
		return b[0], nil
	case 'b':
		b, err := fixed(4)
		if err != nil {
			return nil, err
		}
		switch d.order.Uint32(b) {
		case 0:
			return false, nil
		case 1:
			return true, nil
		}
		return nil, errors.New("dbus: boolean other than 0 or 1")
	case 'n', 'q':
		b, err := fixed(2)
		if err != nil {
			return nil, err
		}
		if t[0] == 'n' {
			return int16(d.order.Uint16(b)), nil
		}
		return d.order.Uint16(b), nil
	case 'i', 'u', 'h':
		b, err := fixed(4)
		if err != nil {
			return nil, err
		}
		if t[0] == 'i' {
			return int32(d.order.Uint32(b)), nil
		}
		return d.order.Uint32(b), nil
	case 'x', 't', 'd':
		b, err := fixed(8)
		if err != nil {
			return nil, err
		}
		switch u := d.order.Uint64(b); t[0] {
		case 'x':
			return int64(u), nil
		case 't':
			return u, nil
		default:
			return math.Float64frombits(u), nil
		}
	case 's', 'o':
		n, err := d.u32()
		if err != nil {
			return nil, err
		}
		if int64(n) >= int64(len(d.b)-d.pos) {
			return nil, errShort
		}
		s, err := d.text(int(n))
		if err != nil {
			return nil, err
		}
		if t[0] == 's' {
			return s, nil
		}
		if !validPath(s) {
			return nil, fmt.Errorf("dbus: invalid object path %q", s)
		}
		return ObjectPath(s), nil
	case 'g':
		return d.signature()
	case 'v':
		sig, err := d.signature()
		if err != nil {
			return nil, err
		}
		if n, err := firstType(string(sig), 0, 0); err != nil || n != len(sig) {
			return nil, fmt.Errorf("dbus: variant signature %q is not one complete type", sig)
		}
		var v any
		err = d.nested(func() (err error) { v, err = d.value(string(sig)); return err })
		return Variant{Sig: sig, Value: v}, err
	case 'a':
		var v any
		err := d.nested(func() (err error) { v, err = d.array(t[1:]); return err })
		return v, err
	case '(', '{':
		types, err := splitSignature(Signature(t[1 : len(t)-1]))
		if err != nil {
			return nil, err
		}
		fields := make([]any, 0, len(types))
		err = d.nested(func() error {
			for _, ft := range types {
				v, err := d.value(ft)
				if err != nil {
					return err
				}
				fields = append(fields, v)
			}
			return nil
		})
		return fields, err
	}
	return nil, fmt.Errorf("dbus: unknown type %q", t)
}

func (d *decoder) nested(f func() error) error {
	if d.depth >= maxNestingDepth {
		return errors.New("dbus: values nested too deeply")
	}
	d.depth++
	defer func() { d.depth-- }()
	return f()
}

func (d *decoder) array(elem string) (any, error) {
	n, err := d.u32()
	if err != nil {
		return nil, err
	}
	if n > maxArrayBytes {
		return nil, fmt.Errorf("dbus: array of %d bytes", n)
	}
	if err := d.align(alignment(elem[0])); err != nil {
		return nil, err
	}
	if int64(n) > int64(len(d.b)-d.pos) {
		return nil, errShort
	}
	end := d.pos + int(n)
	if elem == "y" {
		b := append([]byte{}, d.b[d.pos:end]...)
		d.pos = end
		return b, nil
	}
	items := []any{}
	for d.pos < end {
		v, err := d.value(elem)
		if err != nil {
			return nil, err
		}
		items = append(items, v)
	}
	if d.pos != end {
		return nil, errors.New("dbus: an array element runs past the array's end")
	}
	return items, nil
}
