// Package netproxy is the HTTP proxy through which sandboxed commands reach
// the hosts --allow-net lists (DESIGN.md §3, "Network allow-list").
//
// A [Proxy] serves one call on a listener it is given: in production the
// listening socket is made inside the sandbox's network namespace and
// handed to the server, so nothing listens on the host, and the proxy dials
// from the host. It speaks HTTP CONNECT (any protocol, HTTPS above all,
// tunnelled as it is) and absolute-form HTTP (plain http:// URLs,
// forwarded, each request on an upstream connection of its own), streams
// both ways, and ends every connection when the call ends. It reads and
// writes HTTP/1.1 with net/http's request and response readers and
// writers, not its Server or Transport (serve.go).
//
// It resolves names itself and dials the address it checked, never the
// name again, so a destination that resolves to a loopback, link-local,
// private or unrouted (documentation, discard) address, to an address of
// this machine's, or into a network one of its interfaces is on (the
// LAN's neighbours, on its global IPv6 /64 too) is refused unless the user
// listed that exact host (policy.Host.Internal): a DNS answer cannot turn
// a name a pattern or a preset allows into the host's own services or its
// network's (DNS rebinding). A name or an address listed exactly is
// reached wherever it leads: the user named it. A refused request gets an immediate
// 403 whose status line and body name the host and the --allow-net value
// that would allow it, and [Proxy.Refused] lists the refusals of the call
// for its result ([Note]).
//
// netproxy imports policy and the standard library only.
package netproxy
