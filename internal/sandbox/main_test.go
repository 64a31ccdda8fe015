package sandbox

import (
	"os"
	"testing"
)

// The sandbox re-executes the running binary: in tests that run a
// command, this test binary.
func TestMain(m *testing.M) {
	if IsChild() {
		ChildMain()
	}
	os.Exit(m.Run())
}
