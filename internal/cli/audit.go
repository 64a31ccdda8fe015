package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
	"github.com/nanosandbox/nanosandbox-mcp/internal/server"
)

// openAudit opens the --log-file for appending, before serving: a log that
// cannot be written is a start-up error, not a silent gap. A log that
// commands could write, or lead elsewhere, is refused: they could forge or
// erase its lines, or have the server append lines whose arguments they
// chose to a file of theirs choosing (a ~/.bashrc runs a $(...) there).
// So the path is resolved as open(2) would resolve it, a final link
// included, and refused if the walk to it visits a place commands write
// ([policy.Policy.WritableByCommands]: the workspace, the --writable paths,
// the private home, the server's state, the calls' TMPDIRs where they lie
// on the host), where a link could be re-pointed at the next start; what
// it resolved to is then opened without following a link, and must be the
// regular file checked, with no second name. The file is opened once and
// kept open for the server's life: the server never opens the path again,
// so what happens to the path after the start cannot redirect a line.
func openAudit(path string, pol *policy.Policy) (*server.Audit, func(), error) {
	if path == "" {
		return nil, func() {}, nil
	}
	f, err := openLog(path, pol.WritableByCommands())
	if err != nil {
		return nil, nil, err
	}
	return server.NewAudit(f), func() { f.Close() }, nil
}

// openLog is openAudit's open, writable being where commands write.
func openLog(path string, writable []string) (*os.File, error) {
	bad := func(msg, hint string) error {
		return &usageError{msg: fmt.Sprintf("--log-file %q: %s", path, msg), hint: hint}
	}
	const outside = "put the log outside the workspace, the --writable paths, the server's state and where calls get their TMPDIR, and not behind a symbolic link into them"
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, bad(err.Error(), "pass a file path")
	}
	real, in, err := policy.ResolveCreate(abs, writable)
	if in != "" {
		w := in // the widest of the places that holds in, to name
		for _, d := range writable {
			if policy.Within(in, d) && len(d) < len(w) {
				w = d
			}
		}
		if policy.Within(abs, w) {
			return nil, bad("inside "+w+", which commands can write: they could forge or erase its lines", outside)
		}
		return nil, bad("leads into "+w+" through a symbolic link, and commands can write there: they could forge or erase its lines, or re-point it at another file", outside)
	}
	if err != nil {
		return nil, bad("does not resolve: a directory on its way is missing, or a symbolic link leads nowhere", "pass a file the server can create or append to")
	}
	before, err := os.Lstat(real)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, bad(unwrap(err), "pass a file the server can create or append to")
	}
	// O_NOFOLLOW: real has no link, unless one was made since the walk.
	// O_NONBLOCK: a FIFO is refused at once (ENXIO with no reader), not
	// waited on; a regular file's writes ignore it.
	f, err := os.OpenFile(real, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0o600)
	switch {
	case errors.Is(err, syscall.ELOOP):
		return nil, bad(real+" became a symbolic link as it was opened", "pass a file that stays where it is")
	case errors.Is(err, syscall.ENXIO):
		return nil, bad(real+" is not a regular file", "pass a regular file, or a path where one can be created")
	case err != nil:
		return nil, bad(unwrap(err), "pass a file the server can create or append to")
	}
	opened, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, bad(unwrap(err), "pass a file the server can create or append to")
	}
	if !opened.Mode().IsRegular() {
		f.Close()
		return nil, bad(real+" is not a regular file", "pass a regular file, or a path where one can be created")
	}
	if st, ok := opened.Sys().(*syscall.Stat_t); ok && st.Nlink != 1 {
		f.Close()
		return nil, bad(fmt.Sprintf("%s has %d names (hard links), and one may lie where commands write", real, st.Nlink), "pass a file with one name, or a new path")
	}
	after, err := os.Lstat(real)
	if err != nil || !os.SameFile(opened, after) || before != nil && !os.SameFile(opened, before) {
		f.Close()
		return nil, bad(real+" was replaced as it was opened", "pass a file that stays where it is")
	}
	return f, nil
}

// unwrap is err's message without the operation and path it names.
func unwrap(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
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
