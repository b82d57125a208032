// Package connlimit bounds what one client can hold open on the portal: a
// listener that caps connections per client and in total, and a per-key
// counter for long-lived sockets. A node on the public internet must keep
// answering while one anonymous client opens all it can.
package connlimit

import (
	"net"
	"net/netip"
)

// Key is the budget key of a client address: the address itself for IPv4,
// its /64 for IPv6. One IPv6 subscriber gets a whole /64 (RFC 6177), so
// keying on the full address would give it 2^64 budgets.
func Key(addr netip.Addr) string {
	addr = addr.Unmap()
	if addr.Is6() {
		p, _ := addr.Prefix(64)
		return p.String()
	}
	return addr.String()
}

// KeyOf is Key for a "host:port" remote address (http.Request.RemoteAddr,
// net.Conn.RemoteAddr().String()). An address that does not parse is its
// own key.
func KeyOf(remote string) string {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	return Key(a)
}
