//go:build linux && !nanosandbox_nolandlock

package sandbox

// landlockSwitchedOff is false in every real build. A test build with
// -tags nanosandbox_nolandlock switches Landlock off, so that the tests
// can show what the mounts hold without it (testbuild_nolandlock_linux.go).
const landlockSwitchedOff = false
