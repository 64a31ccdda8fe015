package server

import (
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
)

const toolName = "run_command"

// run_command's arguments, named once: inputSchema lists them, and
// decodeInput takes these and refuses any other.
const (
	argCommand = "command"
	argArgs    = "args"
	argStdin   = "stdin"
)

// runCommandInput is exactly what a model may send: a program, its
// arguments and its stdin. There is no field for paths, network, limits or
// environment, so a model cannot ask for more than the launcher allowed.
type runCommandInput struct {
	Command string   `json:"command"`
	Args    []string `json:"args,omitempty"`
	Stdin   *string  `json:"stdin,omitempty"`
}

// runCommandOutput is the structured result. ExitCode is -1 when there is
// no exit status (killed by a signal, timed out, or never started). Notes
// are the server's, apart from the output, so that a client or a model can
// tell them from output that imitates them.
type runCommandOutput struct {
	ExitCode           int    `json:"exit_code" jsonschema:"the program's exit status; -1 when it was killed or did not start"`
	Signal             string `json:"signal" jsonschema:"the signal that ended the program, such as SIGKILL; empty if it exited"`
	TimedOut           bool   `json:"timed_out" jsonschema:"true when the time limit killed the program"`
	DurationMS         int64  `json:"duration_ms" jsonschema:"wall-clock time of the call in milliseconds"`
	Stdout             string `json:"stdout" jsonschema:"standard output; if long, its head and tail around a marker"`
	Stderr             string `json:"stderr" jsonschema:"standard error; if long, its head and tail around a marker"`
	StdoutOmittedBytes int64  `json:"stdout_omitted_bytes" jsonschema:"bytes of stdout left out in the middle"`
	StderrOmittedBytes int64  `json:"stderr_omitted_bytes" jsonschema:"bytes of stderr left out in the middle"`
	MemoryPeakBytes    int64  `json:"memory_peak_bytes" jsonschema:"peak memory of the whole command (cgroup v2), else of its largest process; 0 if unknown"`
	Error              string `json:"error,omitempty" jsonschema:"why the call failed when it was refused, could not start, timed out, was stopped by a limit or could not be sandboxed"`
	// Notes is never nil: an empty array, not null, when there are none.
	Notes []string `json:"notes" jsonschema:"the server's own notes on the call (output cut, a denial explained, a repository moved aside), as the text block ends with them; never anything the command printed"`
}

// inputSchema is written by hand rather than inferred: args is a plain
// "array" (inference gives ["null","array"], which some clients reject),
// command must not be empty, and nothing else is accepted.
func inputSchema() *jsonschema.Schema {
	one := 1
	return &jsonschema.Schema{
		Type: "object",
		Properties: map[string]*jsonschema.Schema{
			argCommand: {
				Type:        "string",
				MinLength:   &one,
				Description: `The program to run: a name looked up on PATH, or a path. No shell is implied; use "sh" with args ["-c", "..."] for one.`,
			},
			argArgs: {
				Type:        "array",
				Items:       &jsonschema.Schema{Type: "string"},
				Description: "Its arguments, each passed as it is.",
			},
			argStdin: {
				Type:        "string",
				Description: "Text fed to its standard input, which is then closed. If absent, it reads end-of-file at once.",
			},
		},
		PropertyOrder:        slices.Clone(inputKeys),
		Required:             []string{argCommand},
		AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
	}
}

// inputKeys are run_command's arguments, in the schema's order. (A list,
// not the schema's: building a schema at start would cost every process of
// the sandbox, which is this binary again.)
var inputKeys = []string{argCommand, argArgs, argStdin}

func boolPtr(b bool) *bool { return &b }

// outputSchema is inferred from runCommandOutput, but for notes: a plain
// "array" (inference allows null for a slice, which the result never
// holds).
func outputSchema() *jsonschema.Schema {
	s, err := jsonschema.For[runCommandOutput](&jsonschema.ForOptions{})
	if err != nil {
		panic(err) // a static type: cannot fail at run time
	}
	notes := s.Properties["notes"]
	notes.Type, notes.Types = "array", nil
	return s
}

// tool describes run_command, with the effective policy in its description
// so the model does not have to probe, and where the sandbox holds it more
// weakly than it says (caveats: a limit, a missing layer, the reduced
// mode), how.
func tool(p *policy.Policy, caveats string) *mcp.Tool {
	desc := p.Describe()
	if caveats != "" {
		desc += "\n" + caveats
	}
	openWorld := p.HostNetwork || len(p.AllowNet) > 0
	return &mcp.Tool{
		Name:         toolName,
		Title:        "Run a command in the sandbox",
		Description:  desc,
		InputSchema:  inputSchema(),
		OutputSchema: outputSchema(),
		Annotations: &mcp.ToolAnnotations{
			Title:           "Run a command in the sandbox",
			ReadOnlyHint:    false,
			DestructiveHint: boolPtr(true),      // it can change files in the workspace
			IdempotentHint:  false,              // programs have effects
			OpenWorldHint:   boolPtr(openWorld), // only the workspace, unless a network is allowed
		},
	}
}
