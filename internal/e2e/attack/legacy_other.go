//go:build linux && !amd64

package main

// legacyCalls is empty: this architecture has only the *at system calls.
var legacyCalls = map[string]uintptr{}
