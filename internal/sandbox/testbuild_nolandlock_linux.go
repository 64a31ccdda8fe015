//go:build linux && nanosandbox_nolandlock

package sandbox

// landlockSwitchedOff makes this test build probe no Landlock, as on a
// kernel without it: the e2e tests build the binary so and run the escape
// rows the mounts hold (DESIGN.md §2.3: a missing defence-in-depth layer
// is not a refusal). Releases are never built with this tag.
const landlockSwitchedOff = true
