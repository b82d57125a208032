package agent

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	ma "github.com/multiformats/go-multiaddr"
)

// ErrBadAddr is an announced address a node drops: not a multiaddr, a DNS
// component that is not a host name, or an IP in a form that stands for
// another address.
var ErrBadAddr = errors.New("announced address refused")

// CheckAnnouncedAddr checks one address of a heartbeat (Heartbeat.Addrs)
// as it is received: a multiaddr whose /dns, /dns4, /dns6 and /dnsaddr
// values are host names (CheckHostname) and whose IPs are neither
// unspecified nor multicast nor an IPv6 form embedding an IPv4 address
// (IPv4-mapped or -compatible, NAT64, 6to4, Teredo). Private and loopback
// addresses pass: libp2p nodes on one LAN, or one machine, announce them
// to each other; whoever sends a stranger to an address (ARD referrals)
// checks runtime.SpecialAddr there.
func CheckAnnouncedAddr(addr string) error {
	m, err := ma.NewMultiaddr(addr)
	if err != nil {
		return fmt.Errorf("%w: %q is not a multiaddr: %v", ErrBadAddr, addr, err)
	}
	for _, c := range m {
		switch c.Protocol().Code {
		case ma.P_DNS, ma.P_DNS4, ma.P_DNS6, ma.P_DNSADDR:
			if err := CheckHostname(c.Value()); err != nil {
				return fmt.Errorf("%w: %q: %w", ErrBadAddr, addr, err)
			}
		case ma.P_IP4, ma.P_IP6:
			ip, err := netip.ParseAddr(c.Value())
			if err != nil || ip.IsUnspecified() || ip.IsMulticast() || embedsIPv4(ip) {
				return fmt.Errorf("%w: %q: IP %s is not one machine's own address", ErrBadAddr, addr, c.Value())
			}
		}
	}
	return nil
}

// embedsIPv4 says ip is an IPv6 form that stands for an IPv4 address.
func embedsIPv4(ip netip.Addr) bool {
	switch {
	case ip.Is4In6():
		return true
	case !ip.Is6() || ip.IsLoopback() || ip.IsUnspecified():
		return false
	}
	for _, p := range embeddingPrefixes {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// embeddingPrefixes are the IPv6 blocks whose addresses carry an IPv4
// one: IPv4-compatible, NAT64 (well-known and local-use), 6to4, Teredo.
var embeddingPrefixes = []netip.Prefix{
	netip.MustParsePrefix("::/96"),
	netip.MustParsePrefix("64:ff9b::/96"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
	netip.MustParsePrefix("2002::/16"),
	netip.MustParsePrefix("2001::/32"),
}

// AnnouncedAddrs is addrs without those CheckAnnouncedAddr refuses, and
// how many it dropped. nil stays nil (a status/2 round without addresses
// means "unchanged"); a list whose every address is dropped becomes an
// empty one (the sender has none worth keeping).
func AnnouncedAddrs(addrs []string) (kept []string, dropped int) {
	if addrs == nil {
		return nil, 0
	}
	kept = make([]string, 0, len(addrs))
	for _, a := range addrs {
		if CheckAnnouncedAddr(a) != nil {
			dropped++
			continue
		}
		kept = append(kept, a)
	}
	return kept, dropped
}

// CheckHostname checks a host name given where a DNS name belongs (a
// multiaddr's /dns value, a URL host to be resolved): letters, digits,
// hyphens and underscores in dot-separated labels of 1 to 63 bytes, at
// most 253 in all, an optional trailing dot. Refused: an IP literal (it
// names an address, not a name, and would skip the checks of IPs), and a
// last label that is all digits or 0x-hex, which URL parsers read as an
// IPv4 number (http://2130706433/ and http://127.1/ are 127.0.0.1).
func CheckHostname(h string) error {
	if _, err := netip.ParseAddr(h); err == nil {
		return fmt.Errorf("%q is an IP address, not a host name", h)
	}
	h = strings.TrimSuffix(h, ".")
	if h == "" || len(h) > 253 {
		return fmt.Errorf("%q is not a host name", h)
	}
	labels := strings.Split(h, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 {
			return fmt.Errorf("%q is not a host name (empty or over-long label)", h)
		}
		for _, c := range l {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return fmt.Errorf("%q is not a host name (letters, digits, hyphens; IDNs in their xn-- form)", h)
			}
		}
	}
	if numericLabel(labels[len(labels)-1]) {
		return fmt.Errorf("%q ends in a number: URL parsers read it as an IPv4 address", h)
	}
	return nil
}

// numericLabel says l reads as a number to a URL parser's IPv4 host
// parser (decimal, or 0x hex).
func numericLabel(l string) bool {
	l = strings.ToLower(l)
	digits := "0123456789"
	if strings.HasPrefix(l, "0x") {
		l, digits = l[2:], "0123456789abcdef"
		if l == "" {
			return true
		}
	}
	return strings.Trim(l, digits) == ""
}

// LocalOnlyName says a host name only means something inside one network
// (localhost, a single label resolved through search domains, or a TLD
// reserved for private use): a public node never refers a stranger to one.
func LocalOnlyName(h string) bool {
	h = strings.ToLower(strings.TrimSuffix(h, "."))
	i := strings.LastIndexByte(h, '.')
	if i < 0 {
		return true
	}
	switch h[i+1:] {
	case "localhost", "local", "internal", "arpa", "invalid", "onion", "home", "lan", "corp", "intranet", "private":
		return true
	}
	return false
}
