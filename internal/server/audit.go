package server

import (
	"encoding/json"
	"io"
	"sync"
	"time"
)

// Audit appends one JSON line per call to the user's log (--log-file):
// what ran and how it ended, never its stdin or output. One write per line,
// to a file opened for appending, so concurrent calls (and servers sharing
// the file) never interleave within a line.
type Audit struct {
	mu sync.Mutex
	w  io.Writer
}

// NewAudit returns an audit that writes to w.
func NewAudit(w io.Writer) *Audit { return &Audit{w: w} }

// AuditEntry is one call, as logged.
type AuditEntry struct {
	Time        string   `json:"time"` // when the call ended, RFC 3339 with milliseconds
	Command     string   `json:"command"`
	Args        []string `json:"args"`
	ExitCode    int      `json:"exit_code"`
	Signal      string   `json:"signal,omitempty"`
	TimedOut    bool     `json:"timed_out,omitempty"`
	DurationMS  int64    `json:"duration_ms"`
	StdoutBytes *int64   `json:"stdout_bytes,omitempty"` // what the command printed; absent when it went straight to a terminal
	StderrBytes *int64   `json:"stderr_bytes,omitempty"`
	Limit       string   `json:"limit,omitempty"`
	Error       string   `json:"error,omitempty"` // why it was refused or did not run
	Notes       []string `json:"notes,omitempty"`
}

// Record writes e. A nil Audit records nothing.
func (a *Audit) Record(e AuditEntry) {
	if a == nil {
		return
	}
	if e.Time == "" {
		e.Time = time.Now().Format("2006-01-02T15:04:05.000Z07:00")
	}
	if e.Args == nil {
		e.Args = []string{}
	}
	line, err := json.Marshal(e)
	if err != nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.w.Write(append(line, '\n'))
}
