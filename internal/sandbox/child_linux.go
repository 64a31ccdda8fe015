package sandbox

import (
	"fmt"
	"os"
)

// childMain runs one stage of a re-execution (see childEnv): the helper
// (helper_linux.go), the exec stage (exec_linux.go), the probe that proves
// the namespaces give capabilities (probe_linux.go), or the one that does
// nothing.
func childMain(stage string) {
	switch stage {
	case "noop":
		os.Exit(0)
	case "probe":
		probeMain()
	case "helper":
		helperMain()
	case "reduced":
		reducedHelperMain()
	case "exec":
		execMain()
	}
	fmt.Fprintf(os.Stderr, "nanosandbox-mcp: unknown sandbox stage %q\n", stage)
	os.Exit(255)
}
