package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
	"github.com/nanosandbox/nanosandbox-mcp/internal/server"
)

// openAudit opens the --log-file for appending, before serving: a log that
// cannot be written is a start-up error, not a silent gap. A log that
// commands could write (in the workspace or a --writable path) is refused:
// they could forge or erase its lines.
func openAudit(path string, pol *policy.Policy) (*server.Audit, func(), error) {
	if path == "" {
		return nil, func() {}, nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, nil, &usageError{msg: fmt.Sprintf("--log-file %q: %v", path, err), hint: "pass a file path"}
	}
	real := abs
	if d, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		real = filepath.Join(d, filepath.Base(abs))
	}
	for _, g := range pol.Grants {
		if g.Writable && policy.Within(real, g.Path) {
			return nil, nil, &usageError{msg: fmt.Sprintf("--log-file %q: inside %s, which commands can write: they could forge or erase its lines", path, g.Path), hint: "put the log outside the workspace and the --writable paths"}
		}
	}
	f, err := os.OpenFile(real, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, nil, &usageError{msg: fmt.Sprintf("--log-file %q: %s", path, strings.TrimPrefix(err.Error(), "open "+real+": ")), hint: "pass a file the server can create or append to"}
	}
	return server.NewAudit(f), func() { f.Close() }, nil
}

// summary is the one line the server writes to stderr when it starts
// serving (clients show it in their logs): the effective policy, shortly.
func summary(pol *policy.Policy) string {
	var w []string
	for _, g := range pol.Grants {
		if g.Writable {
			w = append(w, g.Path)
		}
	}
	network := "none"
	switch {
	case pol.HostNetwork:
		network = "the host's"
	case len(pol.AllowNet) > 0:
		var hosts []string
		for _, h := range pol.AllowNet {
			hosts = append(hosts, h.String())
		}
		network = "HTTP(S) through the proxy to " + strings.Join(hosts, ", ")
	}
	s := fmt.Sprintf("serving; writable: %s; network: %s", strings.Join(w, ", "), network)
	if pol.Timeout > 0 {
		s += fmt.Sprintf("; timeout %s", pol.Timeout)
	}
	if len(pol.HomeTools) > 0 {
		s += fmt.Sprintf("; %d home tool directories shown read-only", len(pol.HomeTools))
	}
	return s + "; --check tells more"
}
