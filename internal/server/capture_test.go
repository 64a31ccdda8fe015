package server

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCaptureKeepsHeadAndTail(t *testing.T) {
	for _, tt := range []struct {
		name    string
		limit   int
		writes  []string
		want    string
		omitted int64
	}{
		{"empty", 8, nil, "", 0},
		{"fits", 8, []string{"abc", "def"}, "abcdef", 0},
		{"exactly", 8, []string{"abcdefgh"}, "abcdefgh", 0},
		{"one over", 8, []string{"abcdefghi"}, "abcd\n[... 1 bytes omitted ...]\nfghi", 1},
		{"many small writes", 8, strings.Split("0123456789abcdefghij", ""), "0123\n[... 12 bytes omitted ...]\nghij", 12},
		{"one big write", 8, []string{strings.Repeat("x", 1000) + "tail"}, "xxxx\n[... 996 bytes omitted ...]\ntail", 996},
		{"wraps the ring", 6, []string{"aaa", "bbbb", "cc", "dddd", "e"}, "aaa\n[... 8 bytes omitted ...]\ndde", 8},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := newCapture(tt.limit)
			var total int64
			for _, w := range tt.writes {
				n, err := c.Write([]byte(w))
				if n != len(w) || err != nil {
					t.Fatalf("Write: got %d, %v", n, err)
				}
				total += int64(n)
			}
			got, omitted := c.Text()
			if got != tt.want || omitted != tt.omitted || c.Total() != total {
				t.Errorf("got %q omitted %d total %d, want %q omitted %d total %d", got, omitted, c.Total(), tt.want, tt.omitted, total)
			}
		})
	}
}

func TestCaptureCutsOnRuneBoundaries(t *testing.T) {
	c := newCapture(10)
	c.Write([]byte(strings.Repeat("é", 20))) // 2 bytes each
	got, omitted := c.Text()
	if !utf8.ValidString(got) {
		t.Errorf("got invalid UTF-8 %q", got)
	}
	if kept := int64(strings.Count(got, "é") * 2); kept+omitted != 40 {
		t.Errorf("kept %d + omitted %d != 40: %q", kept, omitted, got)
	}
}

func TestCaptureMemoryIsBounded(t *testing.T) {
	c := newCapture(1024)
	chunk := bytes.Repeat([]byte("y\n"), 32<<10)
	for range 512 { // 32 MiB in all
		c.Write(chunk)
	}
	if cap(c.head)+cap(c.ring) > 1024 {
		t.Errorf("capture holds %d bytes, want at most 1024", cap(c.head)+cap(c.ring))
	}
	if _, omitted := c.Text(); omitted != 32<<20-1024 {
		t.Errorf("got omitted %d", omitted)
	}
}
