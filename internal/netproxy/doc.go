// Package netproxy is the HTTP proxy through which sandboxed commands reach
// the hosts --allow-net lists (DESIGN.md §3, "Network allow-list").
//
// A [Proxy] serves one call on a listener it is given: in production the
// listening socket is made inside the sandbox's network namespace and
// handed to the server, so nothing listens on the host, and the proxy dials
// from the host. It speaks HTTP CONNECT (HTTPS above all, tunnelled as it
// is once its first bytes are seen, below) and absolute-form HTTP (plain
// http:// URLs, forwarded, each request on an upstream connection of its
// own), streams both ways, and ends every connection when the call ends.
// It reads and writes HTTP/1.1 with net/http's request and response
// readers and writers, not its Server or Transport (serve.go).
//
// It resolves names itself and dials the address it checked, never the
// name again, so a destination that resolves to a loopback, link-local,
// private or unrouted (documentation, discard) address, to an address of
// this machine's, or into a network one of its interfaces is on (the
// LAN's neighbours, on its global IPv6 /64 too) is refused unless the user
// listed that exact host (policy.Host.Internal): a DNS answer cannot turn
// a name a pattern or a preset allows into the host's own services or its
// network's (DNS rebinding). A name or an address listed exactly is
// reached wherever it leads: the user named it. A refused request gets an
// immediate 403 whose status line and body name the host and the
// --allow-net value that would allow it, and [Proxy.Refused] lists the
// refusals of the call for its result ([Note]).
//
// A CONNECT names the host that is checked and dialled, but a server that
// serves many names on one address (a CDN's front end) goes by the name in
// the tunnel, so the client's first bytes are read before any is passed
// on (tunnel.go), for at most 10 s and 17 KiB, while what the destination
// sends reaches the client at once (a server may speak first). A TLS
// ClientHello, however its records and writes split it, must name no
// server but the CONNECT's host (in any case, a final dot ignored) or one
// the allow-list gives the same port and lets lead to the address dialled
// (so a CONNECT to an IP with a name is refused unless that name is
// listed too); one carrying encrypted_client_hello is refused, since its
// outer name is the front end's and the one it reaches hidden (Chrome
// sends one, a GREASE, unless ECH is off); a malformed one is refused, as
// a server more lenient than the proxy might read a name in it. A plain
// HTTP request line is refused with a 403 in the tunnel that says to send
// it without CONNECT, where the proxy pins its Host. Anything else (SSH)
// passes: the destination was checked by name and address, and nothing in
// the stream names another. A refused tunnel is one of [Proxy.Refused],
// with no --allow-net value where none would allow it. Known limits: what
// an encrypted session carries cannot be read by a proxy that does not
// decrypt it (an HTTP Host or an HTTP/2 :authority naming another site the
// front end serves, which it answers where its certificate covers that
// name, HTTP/2 connection coalescing), nor is a second ClientHello, after
// a HelloRetryRequest.
//
// netproxy imports policy and the standard library only.
package netproxy
