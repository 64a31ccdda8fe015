// Package logline keeps the server's log lines, which go to its stderr,
// free of the control characters a terminal acts on: the names a line
// holds (paths, git's and the sandbox's messages) are often chosen by a
// command, and an operator reads the log with tail -f, an MCP client
// keeps it in its logs. A newline in a name would forge a whole line, a
// carriage return hide the real one, an ESC retitle or recolour the
// terminal. Escape writes each as a visible escape; Handler, the process's
// slog handler (main sets it), and Sprintf apply it to every line, so no
// call site can forget it.
//
// It imports only the standard library.
package logline
