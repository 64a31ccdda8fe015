package logline

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// escaped reports whether r is written as an escape: C0 (newline, carriage
// return and tab included), DEL, C1, the line and paragraph separators, and
// the bidirectional controls, which reorder what a line seems to say.
func escaped(r rune) bool {
	return r < 0x20 || r >= 0x7f && r <= 0x9f || r == 0x2028 || r == 0x2029 ||
		r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069
}

// Escape returns s with each control character (see escaped) written as
// \n, \r, \t, \xNN or \u00NN, and each byte that is not UTF-8 as \xNN, as
// strconv.Quote writes them; everything else, backslashes and the
// letters of any script included, stays as it is, so that an ordinary
// path reads as itself, and escaping twice changes nothing.
func Escape(s string) string {
	clean := true
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || escaped(r) {
			clean = false
			break
		}
		i += size
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case escaped(r) && r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		case escaped(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// Sprintf is fmt.Sprintf with the line it makes escaped (Escape): every
// argument, whatever its type (a string, a []string, an error), is
// printed with its control characters escaped.
func Sprintf(format string, args ...any) string {
	return Escape(fmt.Sprintf(format, args...))
}

// Handler writes slog records as log's default logger does
// ("2006/01/02 15:04:05 WARN message key=value"), one line each, with the
// message and every value escaped (Escape), and values that hold a blank,
// a quote or an equals sign quoted.
type Handler struct {
	w     io.Writer
	mu    *sync.Mutex
	level slog.Leveler
	attrs string // the attributes of WithAttrs, formatted
	group string // the prefix of WithGroup's keys ("g.")
}

// NewHandler returns a Handler writing records at level or above to w. If
// level is nil, it is slog.LevelInfo.
func NewHandler(w io.Writer, level slog.Leveler) *Handler {
	if level == nil {
		level = slog.LevelInfo
	}
	return &Handler{w: w, mu: new(sync.Mutex), level: level}
}

// Enabled reports whether records at l are written.
func (h *Handler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level.Level() }

// Handle writes r as one line.
func (h *Handler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	if !r.Time.IsZero() {
		b.WriteString(r.Time.Format("2006/01/02 15:04:05 "))
	}
	b.WriteString(r.Level.String())
	b.WriteString(" ")
	b.WriteString(Escape(r.Message))
	b.WriteString(h.attrs)
	r.Attrs(func(a slog.Attr) bool {
		appendAttr(&b, h.group, a)
		return true
	})
	b.WriteString("\n")
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, b.String())
	return err
}

// WithAttrs returns a Handler that writes attrs on every line too.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	var b strings.Builder
	for _, a := range attrs {
		appendAttr(&b, h.group, a)
	}
	c.attrs += b.String()
	return &c
}

// WithGroup returns a Handler whose keys are prefixed with name.
func (h *Handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.group += name + "."
	return &c
}

func appendAttr(b *strings.Builder, prefix string, a slog.Attr) {
	v := a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return
	}
	if v.Kind() == slog.KindGroup {
		if a.Key != "" {
			prefix += a.Key + "."
		}
		for _, g := range v.Group() {
			appendAttr(b, prefix, g)
		}
		return
	}
	b.WriteString(" ")
	b.WriteString(quoted(prefix + a.Key))
	b.WriteString("=")
	if v.Kind() == slog.KindTime {
		b.WriteString(v.Time().Format(time.RFC3339))
		return
	}
	b.WriteString(quoted(v.String()))
}

// quoted is s escaped, and quoted where it holds a blank, a quote or an
// equals sign (or is empty), so that key=value pairs stay apart.
func quoted(s string) string {
	if s == "" || strings.ContainsAny(s, " =\"") || Escape(s) != s {
		return strconv.Quote(s)
	}
	return s
}
