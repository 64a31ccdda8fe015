package policy

import (
	"fmt"
	"strings"
)

// Denial is a request the policy refuses before anything runs. Its message is
// written for the model: the cause, then a way forward.
type Denial struct {
	Reason string
	Hint   string
}

func (d *Denial) Error() string {
	msg, hint := d.Explain()
	return msg + "; " + hint
}

// MaxArgBytes bounds the command, its arguments and stdin taken together.
const MaxArgBytes = 8 << 20

// Check refuses a call that cannot run as asked. It never looks at the
// filesystem: what the sandbox hides is found out by running.
func (p *Policy) Check(command string, args []string, stdin string) error {
	if command == "" {
		return &Denial{Reason: "command is empty", Hint: `name a program, for example {"command": "ls", "args": ["-la"]}`}
	}
	if strings.ContainsRune(command, 0) {
		return &Denial{Reason: "command contains a NUL byte", Hint: "pass the program name as plain text"}
	}
	total := len(command) + len(stdin)
	for i, a := range args {
		if strings.ContainsRune(a, 0) {
			return &Denial{Reason: fmt.Sprintf("args[%d] contains a NUL byte", i), Hint: "pass binary data through stdin or a file in the workspace"}
		}
		total += len(a)
	}
	if total > MaxArgBytes {
		return &Denial{Reason: fmt.Sprintf("command, args and stdin total %s, over the %s limit", FormatSize(int64(total)), FormatSize(MaxArgBytes)), Hint: "write large input to a file in the workspace first"}
	}
	return nil
}
