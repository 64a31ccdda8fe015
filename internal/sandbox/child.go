package sandbox

import "os"

// childEnv marks a process as one of the sandbox's own re-executions rather
// than the server: "helper" (pid 1 of the new namespaces), "exec" (the stage
// that applies the last restrictions and becomes the command), "probe" (a
// probe that proves the namespaces can be made and give capabilities) or
// "noop" (a process that does nothing, for its user namespace).
const childEnv = "_NANOSANDBOX_CHILD"

// IsChild reports whether this process is a re-execution of the binary by
// the sandbox. main must check it first thing and call [ChildMain].
func IsChild() bool { return os.Getenv(childEnv) != "" }

// ChildMain runs the sandbox's side of a re-execution. It never returns.
func ChildMain() {
	childMain(os.Getenv(childEnv))
	os.Exit(255)
}
