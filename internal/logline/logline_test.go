package logline

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// planted is a name a command could choose: an OSC title, a colour, a
// forged log line after a newline, a carriage return, a byte that is not
// UTF-8.
const planted = "r\x1b]0;PWNED\x07\x1b[31mX\n2026/12/03 05:37:48 INFO all calls fine\r\xff"

const plantedEscaped = `r\x1b]0;PWNED\x07\x1b[31mX\n2026/12/03 05:37:48 INFO all calls fine\r\xff`

func TestEscape(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"/home/u/proj/src/main.go", "/home/u/proj/src/main.go"},
		{"/home/u/projet été/日本語 ok", "/home/u/projet été/日本語 ok"},
		{`C:\dir`, `C:\dir`},
		{planted, plantedEscaped},
		{"tab\there\x7fdel\u0085c1\u202eltr\u2028sep", `tab\there\x7fdel\u0085c1\u202eltr\u2028sep`},
		{"\x00", `\x00`},
	} {
		if got := Escape(tt.in); got != tt.want {
			t.Errorf("Escape(%q): got %q, want %q", tt.in, got, tt.want)
		}
		if again := Escape(Escape(tt.in)); again != tt.want {
			t.Errorf("Escape twice of %q: got %q, want %q", tt.in, again, tt.want)
		}
	}
}

// TestSprintf: every kind of argument is escaped, as the line is.
func TestSprintf(t *testing.T) {
	got := Sprintf("git guard: moved %s aside: %v %v", "/ws/"+planted, []string{planted}, errors.New(planted))
	want := "git guard: moved /ws/" + plantedEscaped + " aside: [" + plantedEscaped + "] " + plantedEscaped
	if got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

// TestHandler: a record is one line, as log's default logger writes it,
// its message and values escaped.
func TestHandler(t *testing.T) {
	var b bytes.Buffer
	l := slog.New(NewHandler(&b, nil)).With("call", 3)
	l.Debug("not written")
	l.Warn("git guard: moved /ws/"+planted+" aside", "path", planted, "n", 2, slog.Group("g", "k", "a b"))
	out := b.String()
	if strings.Count(out, "\n") != 1 || strings.ContainsAny(out, "\r\x1b\x07") || !strings.HasSuffix(out, "\n") {
		t.Fatalf("not one clean line: %q", out)
	}
	if _, err := time.Parse("2006/01/02 15:04:05", out[:19]); err != nil {
		t.Errorf("the line does not start with the time: %q", out)
	}
	want := " WARN git guard: moved /ws/" + plantedEscaped + ` aside call=3 path="r\x1b]0;PWNED\a\x1b[31mX\n2026/12/03 05:37:48 INFO all calls fine\r\xff" n=2 g.k="a b"` + "\n"
	if got := out[19:]; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}
