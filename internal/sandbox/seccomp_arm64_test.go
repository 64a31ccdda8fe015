//go:build linux

package sandbox

// archModeCalls is empty: arm64 has only the *at calls.
var archModeCalls []seccompModeCall

// archDenied is empty: every arm64 denial is shared.
var archDenied []seccompSyscall
