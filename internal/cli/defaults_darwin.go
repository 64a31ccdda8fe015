package cli

// macOS holds no memory limit for a command and no size for its
// temporary directory (sandbox/seatbelt_platform.go refuses both): none by
// default there.
const (
	defaultMemoryBytes = 0
	defaultTmpBytes    = 0
)
