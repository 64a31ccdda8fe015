package policy

import (
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"
)

// Host is one destination --allow-net lets commands reach through the
// server's proxy.
type Host struct {
	// Name is a host name in lower case without a final dot, a pattern
	// "*.example.com" that matches every name below example.com (not
	// example.com itself), or an IP address in its canonical form.
	Name string `json:"name"`
	// Port is the one port allowed. If zero, 80 and 443 are.
	Port int `json:"port,omitempty"`
	// Preset is the preset that listed Name ("@npm"); empty when the user
	// listed it.
	Preset string `json:"preset,omitempty"`
}

// String gives h as --allow-net takes it: "example.com", "*.example.com:8443",
// "[::1]:8080".
func (h Host) String() string {
	name := h.Name
	if strings.Contains(name, ":") {
		name = "[" + name + "]"
	}
	if h.Port == 0 {
		if strings.HasPrefix(name, "[") {
			return h.Name
		}
		return name
	}
	return name + ":" + strconv.Itoa(h.Port)
}

// Pattern reports whether h names every host below a domain.
func (h Host) Pattern() bool { return strings.HasPrefix(h.Name, "*.") }

// Internal reports whether h may lead to loopback, link-local and private
// addresses: only a name or address the user listed exactly does. A
// pattern or a preset that resolves there is refused, so that no DNS
// answer (DNS rebinding) turns an allowed name into the host's own
// services.
func (h Host) Internal() bool { return !h.Pattern() && h.Preset == "" }

// loopback reports whether h names a loopback address, which inside the
// sandbox is the sandbox's own.
func (h Host) loopback() bool {
	if a, err := netip.ParseAddr(h.Name); err == nil {
		return a.IsLoopback()
	}
	return h.Name == "localhost" || strings.HasSuffix(h.Name, ".localhost")
}

// allows reports whether h allows name (normalised by NormalHost) on port.
func (h Host) allows(name string, port int) bool {
	switch {
	case h.Port == 0 && port != 80 && port != 443:
		return false
	case h.Port != 0 && port != h.Port:
		return false
	case h.Pattern():
		return strings.HasSuffix(name, h.Name[1:]) && len(name) > len(h.Name)-1
	}
	return name == h.Name
}

// MatchHost returns the entry of hosts that allows name on port, or false.
// An entry the user listed exactly comes before a pattern or a preset, so
// that Internal answers for the most specific grant.
func MatchHost(hosts []Host, name string, port int) (Host, bool) {
	name, err := NormalHost(name)
	if err != nil || port < 1 || port > 65535 {
		return Host{}, false
	}
	var found Host
	ok := false
	for _, h := range hosts {
		if h.allows(name, port) {
			if h.Internal() {
				return h, true
			}
			if !ok {
				found, ok = h, true
			}
		}
	}
	return found, ok
}

// NormalHost returns name as --allow-net entries hold it: an IP address in
// canonical form (brackets and an IPv6 zone are not accepted), or a host
// name of ASCII letters, digits, '-' and '_' in dot-separated labels, in
// lower case without a final dot.
func NormalHost(name string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("empty host name")
	}
	if a, err := netip.ParseAddr(name); err == nil {
		if a.Zone() != "" {
			return "", fmt.Errorf("an address with a zone")
		}
		return a.Unmap().String(), nil
	}
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	if len(name) > 253 {
		return "", fmt.Errorf("a host name longer than 253 characters")
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" || len(label) > 63 {
			return "", fmt.Errorf("not a host name")
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				if c > 127 {
					return "", fmt.Errorf("not ASCII")
				}
				return "", fmt.Errorf("%q is not allowed in a host name", c)
			}
		}
	}
	if looksNumeric(name) {
		// 127.1, 0x7f.1 and 2130706433 reach 127.0.0.1 through C's
		// inet_aton: only the dotted quad is an address here.
		return "", fmt.Errorf("not an IP address in dotted-quad form")
	}
	return name, nil
}

// looksNumeric reports whether the last label of name is a number, as in
// every spelling of an IPv4 address; no top-level domain is.
func looksNumeric(name string) bool {
	last := name[strings.LastIndexByte(name, '.')+1:]
	if strings.HasPrefix(last, "0x") {
		last = last[2:]
		if last == "" {
			return true
		}
		for _, c := range last {
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
				return false
			}
		}
		return true
	}
	for _, c := range last {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// ParseHost reads one --allow-net value other than a preset:
// HOST[:PORT], *.DOMAIN[:PORT], an IPv4 address, or an IPv6 address, in
// brackets when a port follows.
func ParseHost(raw string) (Host, error) {
	bad := func(err, hint string) (Host, error) {
		return Host{}, &FlagError{Flag: "--allow-net", Value: raw, Err: err, Hint: hint}
	}
	const form = "pass HOST or HOST:PORT (without a port, 80 and 443), *.example.com for its subdomains, or @npm, @pypi, @go, @crates, @github"
	switch raw {
	case "":
		return bad("empty", form)
	case "*", "*:80", "*:443":
		return bad("would allow every host", "list the hosts commands need; --host-network shares the host's whole network")
	}
	if strings.Contains(raw, "://") || strings.ContainsAny(raw, "/?#@") {
		return bad("not a host", "pass the host name alone, without a scheme or path: --allow-net example.com")
	}
	name, portText := raw, ""
	switch {
	case strings.HasPrefix(raw, "["):
		end := strings.IndexByte(raw, ']')
		if end < 0 {
			return bad("no closing ]", "write an IPv6 address with a port as [::1]:8080")
		}
		name, portText = raw[1:end], raw[end+1:]
		if portText != "" && !strings.HasPrefix(portText, ":") {
			return bad("unexpected text after ]", "write an IPv6 address with a port as [::1]:8080")
		}
		portText = strings.TrimPrefix(portText, ":")
		if _, err := netip.ParseAddr(name); err != nil || !strings.Contains(name, ":") {
			return bad("not an IPv6 address in brackets", form)
		}
		if portText == "" {
			return bad("a port is missing after the colon", "write [::1]:8080, or the address alone for ports 80 and 443")
		}
	case strings.Count(raw, ":") > 1:
		// An IPv6 address without brackets takes no port.
	case strings.Contains(raw, ":"):
		name, portText, _ = strings.Cut(raw, ":")
		if portText == "" {
			return bad("a port is missing after the colon", "write HOST:PORT, or HOST alone for ports 80 and 443")
		}
	}
	h := Host{}
	if portText != "" {
		p, err := strconv.Atoi(portText)
		if err != nil || p < 1 || p > 65535 || portText[0] == '0' || portText[0] == '+' {
			return bad("not a port", "a port is a number from 1 to 65535")
		}
		h.Port = p
	}
	pattern := false
	if strings.HasPrefix(name, "*.") {
		pattern, name = true, name[2:]
	}
	if strings.Contains(name, "*") {
		return bad("a * is allowed only as the first label", "write *.example.com for every host below example.com; list other hosts one by one")
	}
	n, err := NormalHost(name)
	if err != nil {
		hint := form
		if strings.Contains(err.Error(), "ASCII") {
			hint = "write an internationalised name in its xn-- form"
		}
		return bad(err.Error(), hint)
	}
	if pattern {
		if _, err := netip.ParseAddr(n); err == nil {
			return bad("a * pattern over an address", "list the address itself")
		}
		if !strings.Contains(n, ".") {
			return bad("a * pattern over a top-level domain", "name a domain you trust: *.example.com")
		}
		n = "*." + n
	}
	h.Name = n
	return h, nil
}

// ParseNetwork checks --allow-net and --host-network: it expands every
// --allow-net value, in order, each destination once (one the user listed
// is kept over a preset's). A bad value is a *FlagError.
func ParseNetwork(allowNet []string, hostNetwork bool) ([]Host, error) {
	if hostNetwork && len(allowNet) > 0 {
		return nil, &FlagError{Flag: "--host-network", Err: "cannot go with --allow-net: the host's network reaches every host and port", Hint: "drop one: --allow-net for HTTP(S) to the hosts listed, --host-network for all of the host's network"}
	}
	return parseAllowNet(allowNet)
}

func parseAllowNet(raw []string) ([]Host, error) {
	var out []Host
	index := map[Host]int{} // Name and Port only
	add := func(h Host) {
		key := Host{Name: h.Name, Port: h.Port}
		if i, ok := index[key]; ok {
			if h.Preset == "" {
				out[i].Preset = ""
			}
			return
		}
		index[key] = len(out)
		out = append(out, h)
	}
	for _, r := range raw {
		if strings.HasPrefix(r, "@") {
			hosts, ok := presetHosts(r)
			if !ok {
				return nil, &FlagError{Flag: "--allow-net", Value: r, Err: "no such preset", Hint: "presets are " + strings.Join(PresetNames(), ", ")}
			}
			for _, h := range hosts {
				add(h)
			}
			continue
		}
		h, err := ParseHost(r)
		if err != nil {
			return nil, err
		}
		add(h)
	}
	return out, nil
}

// describeHosts lists hosts for a model: "example.com (ports 80, 443),
// pkg.example:443 (@test)".
func describeHosts(hosts []Host) string {
	var parts []string
	for _, h := range hosts {
		s := h.String()
		var notes []string
		if h.Port == 0 {
			notes = append(notes, "ports 80, 443")
		}
		if h.Preset != "" {
			notes = append(notes, h.Preset)
		}
		if len(notes) > 0 {
			s += " (" + strings.Join(notes, "; ") + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// PresetNames returns the presets --allow-net takes, "@npm" and so on,
// sorted.
func PresetNames() []string {
	var names []string
	for name := range presets {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// presetHosts returns what the preset name ("@npm") expands to.
func presetHosts(name string) ([]Host, bool) {
	entries, ok := presets[name]
	if !ok {
		return nil, false
	}
	hosts := make([]Host, len(entries))
	for i, e := range entries {
		hosts[i] = Host{Name: e.host, Port: 443, Preset: name}
	}
	return hosts, true
}
