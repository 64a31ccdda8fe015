package netproxy

import (
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
)

// ownAddrs lists the addresses of this machine's interfaces: a name a
// pattern admits must not lead to the machine itself, whatever kind of
// address it has (a public one on eth0 reaches services bound to every
// address). Empty if they cannot be listed.
func ownAddrs() []netip.Addr {
	as, err := net.InterfaceAddrs()
	out := []netip.Addr{}
	if err != nil {
		return out
	}
	for _, a := range as {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			out = append(out, p.Addr().Unmap())
		}
	}
	return out
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
	return ""
}
