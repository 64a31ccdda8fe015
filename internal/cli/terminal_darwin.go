package cli

import "golang.org/x/sys/unix"

const (
	getTermios = unix.TIOCGETA
	setTermios = unix.TIOCSETA // at once: output the command stopped may never drain
)

// resumeOutput restarts output the command may have suspended (tcflow
// TCOOFF), which no mode shows.
func resumeOutput(fd int) { unix.IoctlSetInt(fd, unix.TIOCSTART, 0) }
