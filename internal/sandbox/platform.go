package sandbox

import "context"

// platform is the half of a Sandbox that differs between operating systems.
// Each OS has one file set that defines, besides the platform itself:
//
//	newPlatform(p *policy.Policy, caps *Capabilities, mech *Mechanisms) (platform, error)
//	probe(quick bool) Capabilities
//	childMain(stage string)
//	ProcessesLeft(maxConcurrent int) (limit, left int)
//
// newPlatform prepares, once, what the OS needs to run p's commands. It may
// find that the machine holds less than the probe said and correct caps and
// mech (a delegated cgroup that proved unusable), or refuse. probe backs
// [Probe] and [QuickProbe]; childMain backs [ChildMain]. Linux's set is
// run_linux.go and the files it names, macOS's run_darwin.go and the files
// it names; run_other.go is every OS without a sandbox.
type platform interface {
	// run runs c as [Sandbox.Run] does. With dryRun it builds the sandbox
	// and applies every restriction, then runs no program.
	run(ctx context.Context, c *Command, dryRun bool) (Result, error)
	// keepSpare and close back [Sandbox.KeepSpare] and [Sandbox.Close].
	keepSpare()
	close()
}
