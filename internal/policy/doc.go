// Package policy says what a sandboxed command may touch: the workspace, the
// paths granted with --read-only and --writable, what stays hidden, the
// environment, and the per-call bounds (time, output, concurrency).
//
// It only describes; enforcing is the sandbox package's job. policy imports the
// standard library only, so every rule here is testable without privileges.
package policy
