//go:build !linux

package sandbox

// JoinScope returns caps: there is no systemd here.
func JoinScope(caps Capabilities) Capabilities { return caps }
