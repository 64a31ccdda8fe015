package cli

import (
	"encoding/json"
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
	if f.json {
		return checkJSON(f, caps, stdout, stderr)
	}
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
	fmt.Fprintf(stdout, "reachable     %s\n", indent(pol.DescribeNetwork()))
	fmt.Fprintf(stdout, "policy        %s\n", indent(pol.Describe()))
	if c := sb.Caveats(); c != "" {
		fmt.Fprintf(stdout, "weaker        %s\n", indent(c))
	}
	if pol.HomeGranted {
		fmt.Fprintf(stdout, "credentials   masked by a list of %d paths in each home (internal/policy/hidden.go): a secret kept elsewhere in the home is readable; grant narrower paths where it holds one\n", len(policy.Credentials))
	}
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

// checkReport is --check --json: the same facts, for scripts.
type checkReport struct {
	Capabilities sandbox.Capabilities `json:"capabilities"`
	// Verdict is "ok", "refused" (the machine cannot hold it) or "fails"
	// (building the sandbox failed); Reason and Fix say why.
	Verdict string              `json:"verdict"`
	Reason  string              `json:"reason,omitempty"`
	Fix     string              `json:"fix,omitempty"`
	Limits  *sandbox.Mechanisms `json:"limits,omitempty"`
	// Policy is what the tool description tells the model, and Caveats
	// what it adds where the sandbox holds less.
	Policy      string            `json:"policy,omitempty"`
	Caveats     string            `json:"caveats,omitempty"`
	HomeTools   []policy.HomeTool `json:"home_tools,omitempty"`
	PrivateHome string            `json:"private_home,omitempty"`
	// AllowNet is what commands reach through the proxy; HostNetwork is
	// set when they share the host's network instead.
	AllowNet    []policy.Host `json:"allow_net,omitempty"`
	HostNetwork bool          `json:"host_network,omitempty"`
	DryRunMS    float64       `json:"dry_run_ms,omitempty"`
	// AppArmor holds the profiles that allow user namespaces for this
	// binary where AppArmor restricts them, each with its install command.
	AppArmor []sandbox.AppArmorProfile `json:"apparmor_profiles,omitempty"`
}

func checkJSON(f *flags, caps sandbox.Capabilities, stdout, stderr io.Writer) int {
	rep := checkReport{Capabilities: caps, Verdict: "ok"}
	if caps.AppArmor {
		rep.AppArmor = sandbox.AppArmorProfiles()
	}
	code := exitOK
	emit := func() int {
		b, _ := json.MarshalIndent(rep, "", "  ")
		fmt.Fprintf(stdout, "%s\n", b)
		return code
	}
	if r := caps.Refusal(); r != nil {
		rep.Verdict, rep.Reason, rep.Fix = "refused", r.Cause, r.Fix
		code = exitRuntime
		return emit()
	}
	if f.workspace == "" {
		return emit()
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
		if fe := (*policy.FlagError)(nil); errors.As(err, &fe) {
			return fail(stderr, err)
		}
		rep.Verdict, rep.Reason, code = "fails", err.Error(), exitRuntime
		if r, ok := err.(*sandbox.Refusal); ok {
			rep.Verdict, rep.Reason, rep.Fix = "refused", r.Cause, r.Fix
		}
		return emit()
	}
	m := sb.Mechanisms()
	rep.Limits, rep.Policy, rep.HomeTools, rep.PrivateHome = &m, pol.Describe(), pol.HomeTools, pol.PrivateHome
	rep.Caveats = sb.Caveats()
	rep.AllowNet, rep.HostNetwork = pol.AllowNet, pol.HostNetwork
	rep.DryRunMS = float64(time.Since(began).Microseconds()) / 1000
	return emit()
}
