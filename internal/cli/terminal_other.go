//go:build !linux && !darwin

package cli

// saveTerminals does nothing: no one-shot command runs here.
func saveTerminals(files ...any) (restore func()) { return func() {} }
