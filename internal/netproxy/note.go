package netproxy

import (
	"fmt"
	"strings"
)

// maxNoted is how many refusals one note names.
const maxNoted = 10

// Note is the line a tool result adds when the proxy refused destinations
// during the call (refused, and more past them), so the model learns that
// the sandbox, not the internet, said no; empty if it refused none. It
// names the --allow-net values that would allow them, where one would.
func Note(refused []Refusal, more int) string {
	if len(refused) == 0 {
		return ""
	}
	var dests, flags []string
	seen := map[string]bool{}
	for i, r := range refused {
		if i == maxNoted {
			break
		}
		dests = append(dests, r.Dest+" ("+r.Why+")")
		if r.Allow != "" && !seen[r.Allow] {
			seen[r.Allow] = true
			flags = append(flags, "--allow-net "+r.Allow)
		}
	}
	if n := len(refused) - len(dests) + more; n > 0 {
		dests = append(dests, fmt.Sprintf("and %d more", n))
	}
	if len(flags) == 0 { // what tunnels carried, which no flag allows
		return "network: the sandbox refused " + strings.Join(dests, ", ")
	}
	return "network: the sandbox refused " + strings.Join(dests, ", ") +
		"; only what the server was started with --allow-net can be reached; to allow these, ask the user to restart it with " + strings.Join(flags, " ")
}
