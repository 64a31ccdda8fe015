package netproxy

import (
	"fmt"
	"net"
	"net/netip"
)

var (
	thisNetwork = netip.MustParsePrefix("0.0.0.0/8")     // "this host on this network": 0.0.0.0 reaches the host
	sharedSpace = netip.MustParsePrefix("100.64.0.0/10") // carrier-grade NAT, and VPN overlays (Tailscale)
	reserved    = netip.MustParsePrefix("240.0.0.0/4")   // includes 255.255.255.255
	nat64       = netip.MustParsePrefix("64:ff9b::/96")  // an IPv4 address behind a NAT64 gateway
	nat64Local  = netip.MustParsePrefix("64:ff9b:1::/48")
	sixToFour   = netip.MustParsePrefix("2002::/16")     // an IPv4 address in bits 16 to 48
	siteLocal   = netip.MustParsePrefix("fec0::/10")     // deprecated, still routed by some
	benchmark   = netip.MustParsePrefix("198.18.0.0/15") // network benchmarks: a lab's, never the internet's
	protocol    = netip.MustParsePrefix("192.0.0.0/24")  // IETF assignments (NAT64 discovery, DS-Lite)
	v4Compat    = netip.MustParsePrefix("::/96")         // deprecated IPv4-compatible addresses
	// Documentation and discard ranges are not routed on the internet:
	// where one is reachable, it is somebody's own network.
	unrouted = []netip.Prefix{
		netip.MustParsePrefix("192.0.2.0/24"),    // TEST-NET-1
		netip.MustParsePrefix("198.51.100.0/24"), // TEST-NET-2
		netip.MustParsePrefix("203.0.113.0/24"),  // TEST-NET-3
		netip.MustParsePrefix("2001:db8::/32"),   // documentation
		netip.MustParsePrefix("3fff::/20"),       // documentation (RFC 9637)
		netip.MustParsePrefix("100::/64"),        // discard-only
		netip.MustParsePrefix("2001:2::/48"),     // benchmarking, as 198.18.0.0/15
	}
)

// ifaceNet is an address of one of this machine's interfaces, with the
// network the interface is on.
type ifaceNet struct {
	iface string       // "eth0"
	addr  netip.Prefix // 192.0.2.2/24
}

// interfaceNets lists the addresses of this machine's interfaces and their
// networks. Empty if they cannot be listed.
func interfaceNets() []ifaceNet {
	out := []ifaceNet{}
	ifs, err := net.Interfaces()
	if err != nil {
		return out
	}
	for _, i := range ifs {
		as, err := i.Addrs()
		if err != nil {
			continue
		}
		for _, a := range as {
			p, err := netip.ParsePrefix(a.String())
			if err != nil {
				continue
			}
			if p.Addr().Is4In6() {
				p = netip.PrefixFrom(p.Addr().Unmap(), max(p.Bits()-96, 0))
			}
			out = append(out, ifaceNet{iface: i.Name, addr: p})
		}
	}
	return out
}

// own says how a leads to this machine or to a network it is on, by the
// addresses and networks of its interfaces (nets): a name a pattern admits
// must lead to neither, whatever kind of address it has (a public one on
// eth0 reaches services bound to every address, and a neighbour in eth0's
// network, a router or a printer on the LAN's global IPv6 /64, is no
// firewall away). Every network an interface is on counts, however wide:
// an interface that claims much of the internet has this refuse it, and
// the refusal names it. Empty if a is neither.
func own(nets []ifaceNet, a netip.Addr) string {
	a = a.Unmap()
	for _, n := range nets {
		if n.addr.Addr() == a {
			return "an address of this machine's own"
		}
	}
	for _, n := range nets {
		if n.addr.Contains(a) {
			return fmt.Sprintf("on this machine's own network (%s %s)", n.iface, n.addr.Masked())
		}
	}
	return ""
}

// internal says what kind of address a is, when it leads to the host
// itself or to a network it sits on rather than to the internet: "loopback",
// "link-local", "private" or "non-public"; empty for a public address.
// An IPv4 address inside an IPv6 one (mapped, NAT64, 6to4) is judged as
// itself.
func internal(a netip.Addr) string {
	a = a.Unmap()
	if a.Is6() {
		b := a.As16()
		switch {
		case nat64.Contains(a):
			return internal(netip.AddrFrom4([4]byte(b[12:16])))
		case sixToFour.Contains(a):
			return internal(netip.AddrFrom4([4]byte(b[2:6])))
		case nat64Local.Contains(a), siteLocal.Contains(a):
			return "private"
		}
	}
	switch {
	case a.IsLoopback():
		return "loopback"
	case a.IsLinkLocalUnicast(), a.IsLinkLocalMulticast():
		return "link-local"
	case a.IsPrivate():
		return "private"
	case !a.IsValid(), a.IsUnspecified(), a.IsMulticast(), thisNetwork.Contains(a), sharedSpace.Contains(a), reserved.Contains(a),
		benchmark.Contains(a), protocol.Contains(a), v4Compat.Contains(a):
		return "non-public"
	}
	for _, p := range unrouted {
		if p.Contains(a) {
			return "non-public"
		}
	}
	return ""
}
