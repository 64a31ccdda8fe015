//go:build linux || darwin

package cli

import (
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// saveTerminals records the modes of each terminal among files (the
// one-shot command's stdio), and returns the function that puts them back.
// The command gets the terminal itself, so stty in it (raw mode, no echo)
// would otherwise outlast it in the user's shell.
func saveTerminals(files ...any) (restore func()) {
	type saved struct {
		fd    int
		modes unix.Termios
	}
	var terms []saved
	seen := map[uint64]bool{} // one terminal is often all three
	for _, f := range files {
		file, ok := f.(*os.File)
		if !ok || file == nil {
			continue
		}
		fd := int(file.Fd())
		tio, err := unix.IoctlGetTermios(fd, getTermios)
		if err != nil {
			continue // not a terminal
		}
		var st unix.Stat_t
		if unix.Fstat(fd, &st) == nil {
			if seen[uint64(st.Rdev)] {
				continue
			}
			seen[uint64(st.Rdev)] = true
		}
		terms = append(terms, saved{fd, *tio})
	}
	return func() {
		for _, t := range terms {
			now, err := unix.IoctlGetTermios(t.fd, getTermios)
			if err != nil || *now == t.modes {
				continue
			}
			// From the background a change would stop this process
			// (SIGTTOU) unless it ignores that signal.
			signal.Ignore(syscall.SIGTTOU)
			resumeOutput(t.fd)
			unix.IoctlSetTermios(t.fd, setTermios, &t.modes)
			signal.Reset(syscall.SIGTTOU)
		}
	}
}
