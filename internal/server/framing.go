package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxLineBytes bounds one line of input. The SDK ends the whole session on
// a frame of mcp.DefaultMaxLineLength (16 MiB); a longer line is answered
// and dropped here instead, with room to spare for the newline and the
// SDK's read-ahead.
const maxLineBytes = mcp.DefaultMaxLineLength - 64<<10

// readChunkBytes is how much of a line is read at a time.
const readChunkBytes = 64 << 10

// keepLineBufferBytes is the largest line buffer kept between lines, so an
// idle server does not hold on to the memory of one big call.
const keepLineBufferBytes = 1 << 20

// Log lines about bad input (other than over-long lines, which cost a
// client 16 MiB each) are limited to logBurst per logWindow, so a client
// that sends garbage in a loop cannot flood stderr (a client that
// pipes stderr and never reads it would wedge the server).
const (
	logBurst  = 10
	logWindow = time.Minute
)

// batchHint is the data of the error a JSON-RPC batch gets.
const batchHint = "batches are not supported; send one message per line"

// framing sits between stdin and the SDK's newline-delimited transport,
// which ends the session on the first line it cannot decode (go-sdk v1.8.0)
// and on a line over 16 MiB. framing reads the lines itself and hands the
// SDK only lines it will accept, each a single JSON-RPC message, byte for
// byte as it arrived (whitespace around it and the line ending aside).
// Everything else is answered here, as the JSON-RPC 2.0 specification
// says, and dropped:
//
//   - a blank line: skipped, silently;
//   - a line that is not JSON: -32700 Parse error, id null;
//   - JSON that is not one JSON-RPC message (a number, a string, an object
//     without "jsonrpc": "2.0", a method that is not a string, an id that is
//     neither a string nor a number...): -32600 Invalid Request, with the
//     message's id if it has a usable one, else null;
//   - such an object shaped like a response (no "method", a "result" or an
//     "error"): dropped with a log line, since a response is never answered;
//   - a batch (a JSON array): the MCP revisions this server negotiates
//     (2025-06-18 and later) have none, and the SDK ends the session on one,
//     so it is refused: [] gets one -32600 with id null, and a non-empty
//     batch gets an array holding one -32600 for each request in it, each
//     with that request's id, so no caller waits forever;
//   - a line over maxLineBytes: read and discarded in bounded chunks, then
//     -32600 with the id found at the start of the line, if any.
//
// Unknown methods pass through: the SDK answers them with -32601.
//
// The replies go through the same locked writer as the SDK's own messages,
// so two messages never interleave on stdout.
type framing struct {
	in  *bufio.Reader
	out *lockedWriter
	log *slog.Logger

	max  int    // longest line accepted, without its newline
	line []byte // the line being read, reused between lines
	cur  []byte // what is left of the frame the SDK is reading
	err  error  // the input's error, returned once cur and the last line are done

	logMu      sync.Mutex
	logStart   time.Time
	logged     int
	suppressed int
}

// newFraming returns the reader to give the SDK in place of in, and the
// writer to give it in place of out.
func newFraming(in io.Reader, out io.Writer, log *slog.Logger) (*framing, io.Writer) {
	w := &lockedWriter{w: out}
	return &framing{
		in:  bufio.NewReaderSize(in, readChunkBytes),
		out: w,
		log: log,
		max: maxLineBytes,
	}, w
}

// lockedWriter makes each Write one uninterrupted message.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Read hands the SDK the next good frame. A Read never returns bytes of two
// frames, so the SDK's count of bytes per frame stays exact.
func (f *framing) Read(p []byte) (int, error) {
	for len(f.cur) == 0 {
		if f.err != nil {
			return 0, f.err
		}
		line, over, err := f.readLine()
		if err != nil {
			f.err = err
		}
		if over > 0 {
			f.rejectLong(line, over)
			continue
		}
		f.cur = f.check(line)
	}
	n := copy(p, f.cur)
	f.cur = f.cur[n:]
	return n, nil
}

// readLine reads up to and without the next newline, readChunkBytes at a
// time. A line longer than f.max is read to its end but not kept: its first
// f.max bytes are returned, with its full length in over.
func (f *framing) readLine() (line []byte, over int64, err error) {
	if cap(f.line) > keepLineBufferBytes {
		f.line = nil
	}
	buf := f.line[:0]
	var total int64
	for {
		chunk, err := f.in.ReadSlice('\n')
		if err == nil {
			chunk = chunk[:len(chunk)-1] // the newline
		}
		total += int64(len(chunk))
		if room := f.max - len(buf); room > 0 {
			buf = append(buf, chunk[:min(room, len(chunk))]...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		f.line = buf
		if total > int64(f.max) {
			return buf, total, err
		}
		return buf, 0, err
	}
}

// check returns the frame to pass on for one line, or nil after answering
// or dropping it.
func (f *framing) check(line []byte) []byte {
	msg := bytes.TrimSpace(line)
	if len(msg) == 0 {
		return nil
	}
	if !json.Valid(msg) {
		f.reply(nil, jsonrpc.CodeParseError, "Parse error", "the line is not JSON", len(line))
		return nil
	}
	switch msg[0] {
	case '{':
	case '[':
		f.rejectBatch(msg)
		return nil
	default:
		f.reply(nil, jsonrpc.CodeInvalidRequest, "Invalid Request", "a message must be a JSON object", len(line))
		return nil
	}
	if _, err := jsonrpc.DecodeMessage(msg); err != nil {
		sh := inspect(msg)
		if sh.response {
			f.warn("dropped a malformed response", "bytes", len(line))
			return nil
		}
		f.reply(sh.id, jsonrpc.CodeInvalidRequest, "Invalid Request", "not a JSON-RPC 2.0 message: "+describe(err), len(line))
		return nil
	}
	// msg ends inside f.line, so the newline goes where the rest of the
	// line was, or the slice grows.
	return append(msg, '\n')
}

// rejectBatch answers a JSON array.
func (f *framing) rejectBatch(msg []byte) {
	var elems []json.RawMessage
	if err := json.Unmarshal(msg, &elems); err != nil || len(elems) == 0 {
		f.reply(nil, jsonrpc.CodeInvalidRequest, "Invalid Request", "an empty batch", len(msg))
		return
	}
	var replies []json.RawMessage
	for _, e := range elems {
		sh := inspect(e)
		if sh.response || (sh.request && !sh.hasID) {
			continue // responses and notifications are never answered
		}
		replies = append(replies, errorReply(sh.id, jsonrpc.CodeInvalidRequest, "Invalid Request", batchHint))
	}
	f.warn("refused a batch", "messages", len(elems), "bytes", len(msg))
	if len(replies) == 0 {
		return
	}
	b, err := json.Marshal(replies)
	if err != nil {
		return // cannot happen: each element is marshalled JSON
	}
	f.write(b)
}

// rejectLong answers a line over the limit, given its first f.max bytes.
func (f *framing) rejectLong(head []byte, total int64) {
	sh := leadingID(head)
	// Always logged: it is rare, and a client that sends one has a bug
	// worth seeing.
	if f.log != nil {
		f.log.Warn("dropped a line over the size limit", "bytes", total, "limit", f.max)
	}
	if sh.response {
		return
	}
	f.write(errorReply(sh.id, jsonrpc.CodeInvalidRequest, "Invalid Request",
		fmt.Sprintf("message of %d bytes is over the %d-byte limit; send large input as a file in the workspace", total, f.max)))
}

// reply sends one error to the client and logs it.
func (f *framing) reply(id json.RawMessage, code int64, message, data string, n int) {
	f.warn("answered bad input", "code", code, "bytes", n)
	f.write(errorReply(id, code, message, data))
}

func (f *framing) write(b []byte) {
	// A failed write means stdout is gone; the SDK finds out on its own
	// next write and ends the session.
	_, _ = f.out.Write(append(b, '\n'))
}

// warn logs one line about bad input, at most logBurst per logWindow.
func (f *framing) warn(msg string, args ...any) {
	if f.log == nil {
		return
	}
	f.logMu.Lock()
	defer f.logMu.Unlock()
	now := time.Now()
	if now.Sub(f.logStart) >= logWindow {
		if f.suppressed > 0 {
			f.log.Warn("bad input lines not logged", "count", f.suppressed)
		}
		f.logStart, f.logged, f.suppressed = now, 0, 0
	}
	if f.logged >= logBurst {
		f.suppressed++
		return
	}
	f.logged++
	f.log.Warn(msg, args...)
}

// errorReply is a JSON-RPC error response; a nil id is written as null.
func errorReply(id json.RawMessage, code int64, message, data string) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	d, _ := json.Marshal(data) // a string always marshals
	b, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
	}{"2.0", id, jsonrpc.Error{Code: code, Message: message, Data: d}})
	if err != nil {
		// Only an id that is not JSON fails, and usableID lets none through.
		return errorReply(nil, code, message, data)
	}
	return b
}

// shape is what can be told of a message the SDK would not take.
type shape struct {
	id       json.RawMessage // a usable id, or nil
	hasID    bool            // an "id" key is present, usable or not
	request  bool            // it has a "method"
	response bool            // it has no "method" but a "result" or an "error"
}

// inspect looks at a JSON value the SDK would not take, for an id to answer
// to and whether it is a request or a response.
func inspect(msg []byte) shape {
	var fields map[string]json.RawMessage
	if json.Unmarshal(msg, &fields) != nil {
		return shape{} // not an object
	}
	var sh shape
	for key, v := range fields {
		sh.note(key, v)
	}
	return sh
}

func (sh *shape) note(key string, v json.RawMessage) {
	switch key {
	case "id":
		sh.id, sh.hasID = usableID(v), true
	case "method":
		sh.request, sh.response = true, false
	case "result", "error":
		sh.response = !sh.request
	}
}

// leadingID reads the top-level keys at the start of a JSON object, up to
// where it was cut, for its id and kind.
func leadingID(head []byte) shape {
	var sh shape
	dec := json.NewDecoder(bytes.NewReader(head))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return sh
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			break
		}
		key, _ := t.(string)
		var v json.RawMessage
		err = dec.Decode(&v)
		if key != "id" {
			sh.note(key, nil) // what matters is that the key is there
		} else if err == nil {
			sh.note(key, v)
		}
		if err != nil {
			break // the value runs past the cut
		}
	}
	return sh
}

// usableID returns raw if it is a JSON-RPC id worth echoing (a string or a
// number that fits a float64), a string re-encoded so that it is valid
// UTF-8; else nil.
func usableID(raw json.RawMessage) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil
	}
	switch c := raw[0]; {
	case c == '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil
		}
		if !utf8.Valid(raw) {
			b, _ := json.Marshal(s) // replaces what is not UTF-8
			return b
		}
		return raw
	case c == '-' || ('0' <= c && c <= '9'):
		// One a client can read back: 1e400 is valid JSON but overflows
		// the float64 that JavaScript and Go decode numbers into.
		if _, err := strconv.ParseFloat(string(raw), 64); err != nil {
			return nil
		}
		return raw
	}
	return nil
}

// describe shortens an SDK decoding error for the client.
func describe(err error) string {
	s := err.Error()
	const most = 200
	if len(s) > most {
		s = s[:most] + "..."
	}
	return s
}
