package server

import (
	"fmt"
	"sync"
	"unicode/utf8"
)

// capture keeps at most limit bytes of a stream while it is written: the
// first half and the last half, counting what falls between. Memory stays
// bounded whatever the program prints.
type capture struct {
	mu    sync.Mutex
	limit int
	head  []byte
	ring  []byte // the tail, circular once full
	start int    // index of the oldest tail byte once the ring is full
	full  bool
	total int64
}

func newCapture(limit int) *capture {
	headCap := limit / 2
	return &capture{limit: limit, head: make([]byte, 0, headCap), ring: make([]byte, 0, limit-headCap)}
}

func (c *capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	c.total += int64(n)
	if room := cap(c.head) - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	tailCap := cap(c.ring)
	if len(p) >= tailCap {
		c.ring = append(c.ring[:0], p[len(p)-tailCap:]...)
		c.start, c.full = 0, true
		return n, nil
	}
	for len(p) > 0 {
		if !c.full {
			k := min(tailCap-len(c.ring), len(p))
			c.ring = append(c.ring, p[:k]...)
			p = p[k:]
			if len(c.ring) == tailCap {
				c.full = true
			}
			continue
		}
		k := copy(c.ring[c.start:], p)
		p = p[k:]
		c.start = (c.start + k) % tailCap
	}
	return n, nil
}

// Total is how many bytes were written so far.
func (c *capture) Total() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}

// Text returns what was kept, with a marker where bytes were left out, and
// how many were. Cuts fall on UTF-8 boundaries where the text is UTF-8.
func (c *capture) Text() (string, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	tail := make([]byte, 0, len(c.ring))
	if c.full {
		tail = append(tail, c.ring[c.start:]...)
		tail = append(tail, c.ring[:c.start]...)
	} else {
		tail = append(tail, c.ring...)
	}
	kept := int64(len(c.head) + len(tail))
	if kept == c.total {
		return string(c.head) + string(tail), 0
	}
	head := trimIncompleteEnd(c.head)
	tail = trimIncompleteStart(tail)
	omitted := c.total - int64(len(head)+len(tail))
	return fmt.Sprintf("%s\n[... %d bytes omitted ...]\n%s", head, omitted, tail), omitted
}

// trimIncompleteEnd drops a UTF-8 sequence cut off at the end of b.
func trimIncompleteEnd(b []byte) []byte {
	for i := 1; i <= utf8.UTFMax && i <= len(b); i++ {
		c := b[len(b)-i]
		if c < 0x80 {
			return b // ASCII: nothing cut
		}
		if utf8.RuneStart(c) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			return b
		}
	}
	return b
}

// trimIncompleteStart drops continuation bytes at the start of b.
func trimIncompleteStart(b []byte) []byte {
	for i := 0; i < utf8.UTFMax && i < len(b); i++ {
		if utf8.RuneStart(b[i]) {
			return b[i:]
		}
	}
	return b
}
