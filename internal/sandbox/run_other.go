//go:build !linux && !darwin

package sandbox

import (
	"runtime"

	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
)

// The platform where there is no sandbox (see platform.go): nothing is
// probed but the OS and architecture, which Capabilities.Refusal refuses
// before newPlatform is ever called.

func probe(bool) Capabilities {
	return Capabilities{OS: runtime.GOOS, Arch: runtime.GOARCH, CgroupWhy: "not Linux"}
}

func newPlatform(*policy.Policy, *Capabilities, *Mechanisms) (platform, error) {
	return nil, ErrUnsupported
}

func childMain(string) {}

// ProcessesLeft returns 0, 0: no sandbox here runs commands.
func ProcessesLeft(maxConcurrent int) (limit, left int) { return 0, 0 }
