//go:build linux && !amd64

package main

import "errors"

// reapFlood is written for amd64 only: its clone is a few instructions of
// assembly, since no Go code may run in a child that shares the stack.
func reapFlood(int) error {
	return setupError{errors.New("reap-flood is written for amd64 only")}
}
