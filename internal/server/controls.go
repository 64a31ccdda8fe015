package server

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// A command's output goes into the readable text block as it was printed,
// but for the control characters a terminal acts on: ESC starts a sequence
// that can clear the screen, retitle the window or, with OSC 52, write the
// clipboard of a client that prints results to a terminal, and BEL,
// backspace and the rest redraw what a person reads. The text block shows
// each as a visible escape; structuredContent's stdout and stderr keep the
// bytes as captured. A carriage return stays as it is: every progress
// line (git, npm, pip, curl) and every CRLF line ending holds one, and it
// moves the cursor only to the start of its own line.

// isControl reports whether r is a control character the text block shows
// escaped: C0 but newline, tab and carriage return, DEL, and C1.
func isControl(r rune) bool {
	return r < 0x20 && r != '\n' && r != '\t' && r != '\r' || r == 0x7f || r >= 0x80 && r <= 0x9f
}

// escapeControls returns s with each control character (isControl) as
// \xNN (C0 and DEL) or \u00NN (C1), and, if newlines is set, newlines,
// tabs and carriage returns too. Bytes that are not UTF-8 are left as they are (JSON makes each
// U+FFFD, and binaryNote counts them).
func escapeControls(s string, newlines bool) string {
	escaped := func(r rune) bool { return isControl(r) || newlines && (r == '\n' || r == '\t' || r == '\r') }
	if strings.IndexFunc(s, escaped) < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteByte(s[i])
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

// controls counts the control characters of s (isControl).
func controls(s string) int {
	n := 0
	for _, r := range s {
		if isControl(r) {
			n++
		}
	}
	return n
}

// controlNote says how many control characters of a stream the text block
// shows escaped, and how to see them, or is "".
func controlNote(stream string, n int) string {
	if n == 0 {
		return ""
	}
	what := fmt.Sprintf("%d control characters", n)
	if n == 1 {
		what = "1 control character"
	}
	return fmt.Sprintf(`%s held %s (such as ESC or BEL), shown here as escapes like \x1b; the structured result's %s has them as printed, or pipe the output through od -c`, stream, what, stream)
}
