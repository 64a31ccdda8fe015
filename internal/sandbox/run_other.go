//go:build !linux

package sandbox

import (
	"context"
	"runtime"
)

type osState struct{}

// Probe reports the platform; nothing here can be enforced yet.
func Probe() Capabilities {
	return Capabilities{OS: runtime.GOOS, Arch: runtime.GOARCH, CgroupWhy: "not Linux"}
}

// QuickProbe is Probe.
func QuickProbe() Capabilities { return Probe() }

func (s *Sandbox) prepare() error { return ErrUnsupported }

func (s *Sandbox) dryRun() error { return ErrUnsupported }

func (s *Sandbox) keepSpare() {}

func (s *Sandbox) close() {}

func (s *Sandbox) run(context.Context, *Command) (Result, error) {
	return Result{}, ErrUnsupported
}

func childMain(string) {}
