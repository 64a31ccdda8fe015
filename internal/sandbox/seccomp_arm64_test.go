//go:build linux

package sandbox

// archModeCalls is empty: arm64 has only the *at calls.
var archModeCalls []seccompModeCall
