package policy

import (
	"fmt"
	"slices"
	"strings"
)

// Protection is one protection that the sandbox without namespaces
// (--without-namespaces, Linux) cannot keep. The user gives each up by
// name (--without-protection NAME), or the server refuses to start.
type Protection struct {
	Name string
	// Keeps says what it keeps, and why it cannot be kept without
	// namespaces, for the error that names it.
	Keeps string
	// Lost says what commands meet without it, for the tool's description.
	Lost string
}

// Unkept lists the protections the sandbox without namespaces cannot keep,
// in the order messages name them.
var Unkept = []Protection{
	{
		Name:  "git-carve-outs",
		Keeps: ".git hooks and config stay read-only while a call runs, inside a writable workspace (Landlock cannot take access away below a writable directory; what a call changed there is still judged when it ends)",
		Lost:  ".git hooks and config are writable while a call runs (what a call leaves there is judged when it ends)",
	},
	{
		Name:  "private-tmp",
		Keeps: "each call has a private /tmp, /var/tmp, /run and /dev/shm (without a mount namespace there are none: commands get $TMPDIR, a private directory, and the host's are out of reach)",
		Lost:  "there is no /tmp, /var/tmp, /run or /dev/shm to write: use $TMPDIR, a private directory fresh for each call",
	},
	{
		Name:  "process-isolation",
		Keeps: "commands see only their own processes (without a pid namespace they see the host's in /proc: command lines and owners, not memory or environment; below Landlock ABI 6 they can also signal your processes)",
		Lost:  "commands see the host's processes in /proc (command lines, not memory or environment)",
	},
	{
		Name:  "file-metadata",
		Keeps: "the modes, timestamps, group and extended attributes of your files outside the writable paths stay as they are (Landlock does not cover chmod, chown, utime or setxattr; setuid and setgid bits stay refused)",
		Lost:  "commands can change the mode, timestamps, group and extended attributes of the user's files outside the writable paths, though not their content",
	},
}

// ProtectionNames lists the names --without-protection takes.
func ProtectionNames() []string {
	names := make([]string, len(Unkept))
	for i, pr := range Unkept {
		names[i] = pr.Name
	}
	return names
}

// checkReduced checks the options of the sandbox without namespaces: the
// protections given up by name, and the grants it cannot hold. It runs
// once the grants are resolved.
func checkReduced(o Options, p *Policy) error {
	known := ProtectionNames()
	given := map[string]bool{}
	for _, n := range o.Unprotected {
		if !slices.Contains(known, n) {
			return &FlagError{Flag: "--without-protection", Value: n, Err: "not a protection the sandbox without namespaces gives up", Hint: "name one of " + strings.Join(known, ", ")}
		}
		given[n] = true
	}
	if !o.WithoutNamespaces {
		if len(o.Unprotected) > 0 {
			return &FlagError{Flag: "--without-protection", Value: o.Unprotected[0], Err: "goes with --without-namespaces: with namespaces every protection holds", Hint: "drop it, or add --without-namespaces"}
		}
		return nil
	}
	if len(o.AllowNet) > 0 {
		return &FlagError{Flag: "--allow-net", Value: o.AllowNet[0], Err: "needs the sandbox's own network namespace, where the proxy listens, and --without-namespaces has none", Hint: "drop --allow-net, or give commands the host's whole network with --host-network"}
	}
	for _, g := range p.Grants {
		if g.Writable {
			continue
		}
		for _, w := range p.Grants {
			if w.Writable && w.Path != g.Path && Within(g.Path, w.Path) {
				return &FlagError{Flag: g.Flag, Value: g.Path, Err: "lies inside the writable " + w.Path + ": without namespaces nothing makes it read-only again (Landlock cannot take access away below a writable directory)", Hint: "drop it, or run with namespaces"}
			}
		}
	}
	var missing []string
	var why []string
	for _, pr := range Unkept {
		if !given[pr.Name] {
			missing = append(missing, pr.Name)
			why = append(why, pr.Name+": "+pr.Keeps)
		}
	}
	if len(missing) > 0 {
		return &FlagError{
			Flag: "--without-namespaces",
			Err:  fmt.Sprintf("cannot keep %s:\n  %s", plural(len(missing), "this protection", "these protections"), strings.Join(why, "\n  ")),
			Hint: "to run without " + plural(len(missing), "it", "them") + ", add --without-protection " + strings.Join(missing, ",") + "; or let the server use namespaces (" + "nanosandbox-mcp --check says how)",
		}
	}
	p.WithoutNamespaces = true
	p.Unprotected = known
	return nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// describeReduced is what the tool's description adds without namespaces:
// every protection given up, as commands meet it.
func (p *Policy) describeReduced() string {
	lost := make([]string, 0, len(Unkept))
	for _, pr := range Unkept {
		lost = append(lost, pr.Lost)
	}
	return "This sandbox runs without namespaces (the user chose --without-namespaces): Landlock, seccomp and rlimits hold it, and it is weaker than usual: " +
		strings.Join(lost, "; ") + "."
}
