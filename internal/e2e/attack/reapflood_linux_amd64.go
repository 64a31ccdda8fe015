package main

import (
	"runtime"
	"syscall"
)

// cloneParentExit starts a child of this process's parent that exits at
// once, and returns its pid or -errno.
func cloneParentExit() int64

// reapFlood keeps dead children coming to this process's parent, the
// sandbox's pid 1, from n threads, for as long as it runs: one clone
// (CLONE_PARENT, vfork semantics) after another, each child exiting at
// once, retried while the process limit is reached, so that the parent
// always has one to reap. It returns only when a clone fails otherwise.
func reapFlood(n int) error {
	if n < 1 {
		n = 1
	}
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() {
			runtime.LockOSThread()
			for {
				r := cloneParentExit()
				if r < 0 && syscall.Errno(-r) != syscall.EAGAIN {
					errs <- syscall.Errno(-r)
					return
				}
			}
		}()
	}
	return <-errs
}
