package gitguard

import (
	"os"
	"runtime"
	"strconv"
	"sync"

	"github.com/nanosandbox/nanosandbox-mcp/internal/sandbox/cstage"
)

// limitProgram returns the path that executes the bounds program in C
// (cstage/src/limit.c) from a sealed memfd of this process, made at the
// first run of git, or "" where none was built for this architecture (a
// plain go build) or no memfd can be made executable: then a shell sets
// the bounds, as before (runGitFor).
//
// Why the bounds hold as the shell's did: the program sets RLIMIT_AS and
// RLIMIT_FSIZE, soft and hard, to the lower of the guard's number and the
// hard limit it inherited, then executes git; nothing of git runs before,
// and a failure ends it before git, which the guard then takes as a failed
// run (never as an unbounded one). The memfd is close-on-exec and sealed
// against every change: the path through /proc/self/fd is opened by
// execve in the new process, before its descriptors close, and git holds
// none of it. It never runs inside a sandbox: only the server and the
// command-line process run git.
var limitProgram = sync.OnceValue(func() string {
	blob := cstage.LimitBlob(runtime.GOARCH)
	if blob == nil {
		return ""
	}
	f, err := cstage.SealedMemfd("nanosandbox-mcp: git limits", blob)
	if err != nil {
		return ""
	}
	path := "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))
	if _, err := os.Stat(path); err != nil {
		f.Close() // no /proc: the shell, which needs none
		return ""
	}
	limitFiles = append(limitFiles, f) // kept open for the process's life
	return path
})

// limitFiles holds limitProgram's memfd, which must stay open.
var limitFiles []*os.File
