// Package e2e drives the built binary from outside, as users and attackers
// do: over MCP on stdio, and through the one-shot command line. Its tests
// run as root and, in CI, again as an unprivileged user.
//
// The binaries are built once in TestMain, or taken from NANOSANDBOX_BIN and
// NANOSANDBOX_ATTACK_BIN when set (the unprivileged run has no Go toolchain).
package e2e
