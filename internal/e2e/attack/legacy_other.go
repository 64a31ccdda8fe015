//go:build linux && !amd64

package main

// legacyCalls is empty: this architecture has only the *at system calls.
var legacyCalls = map[string]uintptr{}

// archSyscalls is empty: every arm64 refusal is in syscalls.
var archSyscalls = map[string]func() error{}
