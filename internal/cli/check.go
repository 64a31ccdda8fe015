package cli

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
	"github.com/nanosandbox/nanosandbox-mcp/internal/sandbox"
)

// check prints each layer this machine enforces and, with --workspace,
// whether the requested policy holds: it builds the sandbox for real, runs
// everything but a program, and says how long that took.
func check(f *flags, caps sandbox.Capabilities, stdout, stderr io.Writer) int {
	fmt.Fprint(stdout, caps.Report())
	if r := caps.Refusal(); r != nil {
		fmt.Fprintf(stdout, "verdict       REFUSED: %s\n              fix: %s\n", r.Cause, r.Fix)
		return exitRuntime
	}
	if f.workspace == "" {
		fmt.Fprintf(stdout, "verdict       ok: this machine can hold the sandbox; pass --workspace DIR to check a policy\n")
		return exitOK
	}
	pol, err := buildPolicy(f, false)
	if err != nil {
		return fail(stderr, err)
	}
	began := time.Now()
	sb, err := sandbox.New(pol, caps)
	if err == nil {
		err = sb.DryRun()
	}
	if err != nil {
		pol.Discard()
	}
	if fe := (*policy.FlagError)(nil); errors.As(err, &fe) {
		return fail(stderr, err) // a grant this machine's mounts make unsafe
	}
	if err != nil {
		if r, ok := err.(*sandbox.Refusal); ok {
			fmt.Fprintf(stdout, "verdict       REFUSED: %s\n              fix: %s\n", r.Cause, r.Fix)
		} else {
			fmt.Fprintf(stdout, "verdict       FAILS: %s\n", err)
		}
		return exitRuntime
	}
	fmt.Fprintf(stdout, "limits held   (each: value and mechanism)\n%s", sb.Mechanisms().Report(pol.Limits))
	if f.processCap != "" {
		fmt.Fprintf(stdout, "  note: %s\n", f.processCap)
	}
	fmt.Fprintf(stdout, "policy        %s\n", indent(pol.Describe()))
	if pol.PrivateHome != "" {
		fmt.Fprintf(stdout, "private home  %s (%s; %s homes lists them all)\n", pol.PrivateHome, policy.FormatSize(policy.HomeSize(pol.PrivateHome)), name)
	}
	fmt.Fprintf(stdout, "verdict       ok: the policy holds (dry run in %s)\n", time.Since(began).Round(100*time.Microsecond))
	return exitOK
}

func indent(s string) string {
	out := []byte{}
	for i := 0; i < len(s); i++ {
		out = append(out, s[i])
		if s[i] == '\n' {
			out = append(out, "              "...)
		}
	}
	return string(out)
}
