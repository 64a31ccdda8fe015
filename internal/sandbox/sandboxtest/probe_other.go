//go:build !linux

package sandboxtest

func landlockABI() int         { return 0 }
func userNamespaces() error    { return nil }
func seccompAvailable() bool   { return false }
func cgroup2Delegated() string { return "needs cgroup v2 on Linux" }
