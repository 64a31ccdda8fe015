//go:build !linux

package gitguard

// limitProgram is Linux's alone: elsewhere git runs without the bounds
// (runGitFor).
func limitProgram() string { return "" }
