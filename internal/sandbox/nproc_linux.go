package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// The sandbox's processes and threads run as the caller (DESIGN.md §3), so
// they count against the caller's RLIMIT_NPROC along with the server's own:
// a command that took every process the caller may have would leave the
// server none, and the Go runtime aborts when it cannot make a thread. Root
// is not bound by RLIMIT_NPROC.

// serverThreads is how many threads the server keeps started while it
// serves (see prewarmThreads): one per running call waits for its helper,
// one for the spare, and the runtime's own, with room to spare.
func serverThreads(maxConcurrent int) int {
	return runtime.GOMAXPROCS(0) + maxConcurrent + 8
}

// processReserve is how many of the caller's processes and threads one
// command leaves to the server: its threads, and a helper for the next
// call (a Go start-up and the helper's spare threads).
func processReserve(maxConcurrent int) int {
	return serverThreads(maxConcurrent) + 32
}

// ProcessesLeft returns the caller's RLIMIT_NPROC (soft limit) and how
// many processes and threads one command may have of it while the server
// keeps what it needs to serve maxConcurrent calls. limit is 0 when nothing
// bounds the caller: no limit is set, or the caller is root.
func ProcessesLeft(maxConcurrent int) (limit, left int) {
	var rl unix.Rlimit
	if os.Getuid() == 0 || unix.Getrlimit(unix.RLIMIT_NPROC, &rl) != nil || rl.Cur == unix.RLIM_INFINITY || rl.Cur > 1<<30 {
		return 0, 0
	}
	return int(rl.Cur), int(rl.Cur) - processReserve(maxConcurrent)
}

// userTasks counts the processes and threads whose real uid is this
// process's: what RLIMIT_NPROC counts. It reads every /proc/PID/status, so
// it is for explaining a failure, not for every call.
func userTasks() int {
	uid := strconv.Itoa(os.Getuid())
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		if c := e.Name()[0]; c < '0' || c > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		var real, threads string
		for _, line := range bytes.Split(b, []byte("\n")) {
			if v, ok := bytes.CutPrefix(line, []byte("Uid:")); ok {
				if f := bytes.Fields(v); len(f) > 0 {
					real = string(f[0])
				}
			} else if v, ok := bytes.CutPrefix(line, []byte("Threads:")); ok {
				threads = string(bytes.TrimSpace(v))
			}
		}
		if real == uid {
			t, _ := strconv.Atoi(threads)
			n += max(t, 1)
		}
	}
	return n
}

// processLimitReached explains a helper that could not start or died
// starting when the caller has (nearly) every process RLIMIT_NPROC allows,
// or returns "".
func processLimitReached() string {
	limit, _ := ProcessesLeft(0)
	if limit == 0 {
		return ""
	}
	// A few may have ended since: near is enough.
	if n := userTasks(); n+max(32, limit/10) >= limit {
		return fmt.Sprintf("no process left: this user has %d processes and threads, and RLIMIT_NPROC (ulimit -u) allows %d; "+
			"the commands of other calls, or your programs outside the sandbox, hold them: try again once some end, or raise the limit", n, limit)
	}
	return ""
}

// prewarmThreads makes the Go runtime start n threads, then leaves them
// idle, where it takes threads from before it makes new ones.
func prewarmThreads(n int) {
	var started, release sync.WaitGroup
	started.Add(n)
	release.Add(1)
	for range n {
		go func() {
			runtime.LockOSThread() // each on a thread of its own
			started.Done()
			release.Wait()
			runtime.UnlockOSThread() // then the thread goes idle, not away
		}()
	}
	started.Wait()
	release.Done()
}
