//go:build !darwin

package cli

import "github.com/nanosandbox/nanosandbox-mcp/internal/policy"

const (
	defaultMemoryBytes = policy.DefaultMemoryBytes
	defaultTmpBytes    = policy.DefaultTmpBytes
)
