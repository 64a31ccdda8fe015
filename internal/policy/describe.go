package policy

import (
	"fmt"
	"strings"
)

// Describe tells the model the effective policy in a few lines, so it does
// not have to probe.
func (p *Policy) Describe() string {
	var b strings.Builder
	b.WriteString("Runs one program inside a sandbox and returns its exit status and output. ")
	b.WriteString("There is no shell unless you run one: command \"sh\" with args [\"-c\", \"...\"].\n")

	fmt.Fprintf(&b, "Working directory %s; writable: it", p.Workspace)
	for _, g := range p.Grants[1:] {
		if g.Writable {
			fmt.Fprintf(&b, ", %s", g.Path)
		}
	}
	if p.WithoutNamespaces {
		b.WriteString(" and $TMPDIR, a private directory fresh for each call (there is no writable /tmp). ")
	} else {
		b.WriteString(" and a private /tmp fresh for each call. ")
	}
	var ro, tools []string
	for _, g := range p.Grants {
		switch {
		case g.Writable:
		case g.Flag == "home tools":
			tools = append(tools, g.Path)
		default:
			ro = append(ro, g.Path)
		}
	}
	if len(ro) > 0 {
		fmt.Fprintf(&b, "Read-only: %s. ", strings.Join(ro, ", "))
	}
	if len(tools) > 0 {
		fmt.Fprintf(&b, "Shown read-only from the home for the tools on PATH: %s. ", strings.Join(tools, ", "))
	}
	switch {
	case p.WithoutNamespaces:
		b.WriteString("The system's directories are readable, not writable; home directories, /tmp, /run, /dev/shm and credentials are out of reach.")
	default:
		b.WriteString("The rest of the system is read-only; the home directory, credentials and host /tmp are hidden, and .git hooks and config are read-only.")
	}
	if p.PrivateHome != "" {
		b.WriteString(" HOME is a private directory kept for this workspace, not the user's home: what is written there stays there.")
	}
	b.WriteString("\n")

	b.WriteString(p.describeNetwork() + " ")
	if p.Timeout > 0 {
		fmt.Fprintf(&b, "Each call is killed after %s", p.Timeout)
	} else {
		b.WriteString("Calls have no time limit")
	}
	fmt.Fprintf(&b, "; output is cut to %s per stream (head and tail kept).", FormatSize(int64(p.MaxOutputBytes)))
	if p.WithoutNamespaces {
		b.WriteString(" Calls do not share $TMPDIR, and every process a call starts ends with it.")
	} else {
		b.WriteString(" Calls do not share processes or /tmp.")
	}
	l := p.Limits
	if p.WithoutNamespaces {
		l.TmpBytes = 0 // no private tmpfs to size
	}
	if l := l.describe(); l != "" {
		b.WriteString(" Limits: " + l + ".")
	}
	if p.WithoutNamespaces {
		b.WriteString("\n" + p.describeReduced())
	}
	return b.String()
}

// describe lists the limits in force, shortly.
func (l Limits) describe() string {
	var parts []string
	if l.MemoryBytes > 0 {
		parts = append(parts, FormatSize(l.MemoryBytes)+" memory")
	}
	if l.MaxProcesses > 0 {
		parts = append(parts, fmt.Sprintf("%d processes", l.MaxProcesses))
	}
	if l.MaxFileBytes > 0 {
		parts = append(parts, FormatSize(l.MaxFileBytes)+" per file")
	}
	if l.TmpBytes > 0 {
		parts = append(parts, FormatSize(l.TmpBytes)+" /tmp")
	}
	if l.CPUTime > 0 {
		parts = append(parts, l.CPUTime.String()+" CPU time")
	}
	if l.CPUs > 0 {
		parts = append(parts, fmt.Sprintf("%g CPUs", l.CPUs))
	}
	return strings.Join(parts, ", ")
}

// describeNetwork says in a sentence what commands can reach.
func (p *Policy) describeNetwork() string {
	switch {
	case p.HostNetwork:
		return "Network: the host's, open to every host and port (--host-network); host unix sockets stay hidden."
	case p.WithoutNamespaces:
		return "No network: commands cannot open internet sockets (the user can give them the host's network with --host-network)."
	case len(p.AllowNet) > 0:
		s := "Network: HTTP(S) only, through the proxy that HTTP_PROXY and HTTPS_PROXY name, to " + describeHosts(p.AllowNet) +
			"; any other host gets 403 from the proxy, and connections that bypass it fail."
		for _, h := range p.AllowNet {
			if h.loopback() {
				s += " Inside, localhost and 127.0.0.1 are the sandbox's own and skip the proxy (NO_PROXY): reach the host's listed ones through it anyway (curl --noproxy '')."
				break
			}
		}
		return s
	}
	return "No network: HTTP(S) gets 403 from the sandbox's proxy and other connections fail (the user can allow hosts with --allow-net)."
}

// DescribeNetwork tells the person starting the server what commands can
// reach, one destination a line, with why a preset lists it.
func (p *Policy) DescribeNetwork() string {
	switch {
	case p.HostNetwork:
		return "the host's (--host-network): every host and port, the host's loopback included; host unix sockets stay hidden"
	case p.WithoutNamespaces:
		return "none: no internet sockets (seccomp) and no TCP (Landlock ABI 4+, where the kernel has it)"
	case len(p.AllowNet) == 0:
		return "none: own network namespace, loopback only"
	}
	var b strings.Builder
	b.WriteString("HTTP(S) through the server's proxy, to these only:")
	width := 0
	for _, h := range p.AllowNet {
		width = max(width, len(h.String()))
	}
	for _, h := range p.AllowNet {
		why := "ports 80 and 443"
		switch {
		case h.Preset != "":
			why = h.Preset + ": " + presetWhy(h)
		case h.Port != 0:
			why = "port " + fmt.Sprint(h.Port)
		}
		if h.Pattern() {
			why += "; every name below " + h.Name[2:] + ", none resolving to a private address"
		}
		fmt.Fprintf(&b, "\n  %-*s  %s", width, h.String(), why)
	}
	return b.String()
}
