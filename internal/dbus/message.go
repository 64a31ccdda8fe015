package dbus

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Type is a message's type.
type Type byte

// The message types.
const (
	MethodCall   Type = 1
	MethodReturn Type = 2
	ErrorReply   Type = 3
	Signal       Type = 4
)

// Message flags.
const (
	NoReplyExpected byte = 0x1
	// NoAutoStart asks the bus not to start a service to take the call.
	NoAutoStart byte = 0x2
)

// MaxMessageBytes is the largest message ReadMessage accepts or Marshal
// makes: header, padding and body.
const MaxMessageBytes = 1 << 20

// Header field codes, with the type each must have.
const (
	fieldPath        = 1 // o
	fieldInterface   = 2 // s
	fieldMember      = 3 // s
	fieldErrorName   = 4 // s
	fieldReplySerial = 5 // u
	fieldDestination = 6 // s
	fieldSender      = 7 // s
	fieldSignature   = 8 // g
	fieldUnixFDs     = 9 // u
)

var fieldTypes = map[byte]Signature{
	fieldPath: "o", fieldInterface: "s", fieldMember: "s", fieldErrorName: "s", fieldReplySerial: "u",
	fieldDestination: "s", fieldSender: "s", fieldSignature: "g", fieldUnixFDs: "u",
}

// Message is one D-Bus message. A header field that is empty (or zero) is
// absent.
type Message struct {
	Type   Type
	Flags  byte
	Serial uint32 // if zero, Conn.Send numbers it

	Path        ObjectPath
	Interface   string
	Member      string
	ErrorName   string
	ReplySerial uint32
	Destination string
	Sender      string
	Signature   Signature // of Body

	Body []byte
	// BigEndian says the message is big-endian ('B'), as a peer may send
	// it; Marshal makes little-endian ones otherwise.
	BigEndian bool
}

func (m *Message) order() byteOrder {
	if m.BigEndian {
		return binary.BigEndian
	}
	return binary.LittleEndian
}

// Args decodes the body.
func (m *Message) Args() ([]any, error) { return unmarshal(m.order(), m.Signature, m.Body) }

// NewCall returns a method call with its arguments marshalled by sig.
func NewCall(dest string, path ObjectPath, iface, member string, sig Signature, args ...any) (*Message, error) {
	body, err := Marshal(sig, args...)
	if err != nil {
		return nil, err
	}
	return &Message{Type: MethodCall, Destination: dest, Path: path, Interface: iface, Member: member, Signature: sig, Body: body}, nil
}

// NewSignal returns a signal with its arguments marshalled by sig.
func NewSignal(path ObjectPath, iface, member string, sig Signature, args ...any) (*Message, error) {
	body, err := Marshal(sig, args...)
	if err != nil {
		return nil, err
	}
	return &Message{Type: Signal, Path: path, Interface: iface, Member: member, Signature: sig, Body: body}, nil
}

// NewReply returns the reply to call, with its values marshalled by sig.
func NewReply(call *Message, sig Signature, args ...any) (*Message, error) {
	body, err := Marshal(sig, args...)
	if err != nil {
		return nil, err
	}
	return &Message{Type: MethodReturn, ReplySerial: call.Serial, Destination: call.Sender, Signature: sig, Body: body}, nil
}

// NewError returns an error reply to call.
func NewError(call *Message, name, text string) *Message {
	body, _ := Marshal("s", text) // cannot fail but for text that is not valid UTF-8
	return &Message{Type: ErrorReply, ErrorName: name, ReplySerial: call.Serial, Destination: call.Sender, Signature: "s", Body: body}
}

// Error is an error reply.
type Error struct {
	Name    string // org.freedesktop.DBus.Error.ServiceUnknown, ...
	Message string // its first argument, when that is a string
}

func (e *Error) Error() string {
	if e.Message == "" {
		return e.Name
	}
	return e.Name + ": " + e.Message
}

// replyError turns an error reply into an *Error.
func replyError(m *Message) *Error {
	e := &Error{Name: m.ErrorName}
	if args, err := m.Args(); err == nil && len(args) > 0 {
		e.Message, _ = args[0].(string)
	}
	return e
}

// Marshal encodes m for the wire.
func (m *Message) Marshal() ([]byte, error) {
	if err := m.check(); err != nil {
		return nil, err
	}
	var fields []any
	add := func(code byte, sig Signature, v any) {
		fields = append(fields, []any{code, Variant{Sig: sig, Value: v}})
	}
	if m.Path != "" {
		add(fieldPath, "o", m.Path)
	}
	for _, f := range []struct {
		code byte
		s    string
	}{{fieldInterface, m.Interface}, {fieldMember, m.Member}, {fieldErrorName, m.ErrorName}, {fieldDestination, m.Destination}, {fieldSender, m.Sender}} {
		if f.s != "" {
			add(f.code, "s", f.s)
		}
	}
	if m.ReplySerial != 0 {
		add(fieldReplySerial, "u", m.ReplySerial)
	}
	if m.Signature != "" {
		add(fieldSignature, "g", m.Signature)
	}
	e := encoder{order: m.order()}
	endian := byte('l')
	if m.BigEndian {
		endian = 'B'
	}
	e.b = append(e.b, endian, byte(m.Type), m.Flags, 1)
	e.b = e.order.AppendUint32(e.b, uint32(len(m.Body)))
	e.b = e.order.AppendUint32(e.b, m.Serial)
	if err := e.value("a(yv)", fields); err != nil {
		return nil, err
	}
	e.align(8)
	if len(e.b)+len(m.Body) > MaxMessageBytes {
		return nil, fmt.Errorf("dbus: message of %d bytes", len(e.b)+len(m.Body))
	}
	return append(e.b, m.Body...), nil
}

// check says what a message of its type lacks.
func (m *Message) check() error {
	if m.Serial == 0 {
		return errors.New("dbus: message without a serial number")
	}
	missing := ""
	switch m.Type {
	case MethodCall:
		if m.Path == "" || m.Member == "" {
			missing = "a path and a member"
		}
	case MethodReturn:
		if m.ReplySerial == 0 {
			missing = "a reply serial"
		}
	case ErrorReply:
		if m.ErrorName == "" || m.ReplySerial == 0 {
			missing = "an error name and a reply serial"
		}
	case Signal:
		if m.Path == "" || m.Interface == "" || m.Member == "" {
			missing = "a path, an interface and a member"
		}
	case 0:
		return errors.New("dbus: message of type 0")
	}
	if missing != "" {
		return fmt.Errorf("dbus: message of type %d without %s", m.Type, missing)
	}
	if len(m.Body) > 0 && m.Signature == "" {
		return errors.New("dbus: message with a body and no signature")
	}
	return nil
}

// ReadMessage reads one message. It returns io.EOF if r ended before the
// message began.
func ReadMessage(r io.Reader) (*Message, error) {
	var fixed [16]byte
	if _, err := io.ReadFull(r, fixed[:]); err != nil {
		return nil, err
	}
	var order byteOrder
	switch fixed[0] {
	case 'l':
		order = binary.LittleEndian
	case 'B':
		order = binary.BigEndian
	default:
		return nil, fmt.Errorf("dbus: unknown byte order %q", fixed[0])
	}
	if fixed[3] != 1 {
		return nil, fmt.Errorf("dbus: protocol version %d", fixed[3])
	}
	bodyLen := uint64(order.Uint32(fixed[4:]))
	fieldsLen := uint64(order.Uint32(fixed[12:]))
	headerLen := (16 + fieldsLen + 7) &^ 7
	if headerLen+bodyLen > MaxMessageBytes {
		return nil, fmt.Errorf("dbus: message of %d bytes", headerLen+bodyLen)
	}
	buf := make([]byte, headerLen+bodyLen)
	copy(buf, fixed[:])
	if _, err := io.ReadFull(r, buf[16:]); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	for _, c := range buf[16+fieldsLen : headerLen] {
		if c != 0 {
			return nil, errors.New("dbus: padding is not zero")
		}
	}
	d := decoder{b: buf[:16+fieldsLen], pos: 12, order: order}
	v, err := d.value("a(yv)")
	if err != nil {
		return nil, err
	}
	m := &Message{Type: Type(fixed[1]), Flags: fixed[2], Serial: order.Uint32(fixed[8:]), BigEndian: fixed[0] == 'B'}
	if bodyLen > 0 {
		m.Body = buf[headerLen:]
	}
	seen := map[byte]bool{}
	for _, f := range v.([]any) {
		code, val := f.([]any)[0].(byte), f.([]any)[1].(Variant)
		want, known := fieldTypes[code]
		if !known {
			continue // the specification: unknown fields are ignored
		}
		if seen[code] {
			return nil, fmt.Errorf("dbus: header field %d twice", code)
		}
		seen[code] = true
		if val.Sig != want {
			return nil, fmt.Errorf("dbus: header field %d of type %q, want %q", code, val.Sig, want)
		}
		switch code {
		case fieldPath:
			m.Path = val.Value.(ObjectPath)
		case fieldInterface:
			m.Interface = val.Value.(string)
		case fieldMember:
			m.Member = val.Value.(string)
		case fieldErrorName:
			m.ErrorName = val.Value.(string)
		case fieldReplySerial:
			m.ReplySerial = val.Value.(uint32)
		case fieldDestination:
			m.Destination = val.Value.(string)
		case fieldSender:
			m.Sender = val.Value.(string)
		case fieldSignature:
			m.Signature = val.Value.(Signature)
		case fieldUnixFDs:
			if val.Value.(uint32) != 0 {
				return nil, errors.New("dbus: a message with file descriptors, which were not negotiated")
			}
		}
	}
	if err := m.check(); err != nil {
		return nil, err
	}
	return m, nil
}
