package agent

import (
	"fmt"
	"net/netip"
	"net/url"
	"strings"
)

// CheckPublicHost refuses URLs whose host is obviously not on the public
// internet: loopback, private, link-local (cloud metadata), unspecified or
// multicast IP literals, and names like localhost. It is the registration-time
// half of the SSRF guard; the outbound HTTP client checks again after DNS
// resolution, since a public-looking name can resolve to a private address.
func CheckPublicHost(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("is not a URL")
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") || strings.HasSuffix(host, ".internal") || strings.HasSuffix(host, ".local") {
		return fmt.Errorf("points at a local or internal host; the node operator can allow this with --allow-private-endpoints")
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if !IsPublicIP(ip) {
			return fmt.Errorf("points at a private, loopback or link-local address; the node operator can allow this with --allow-private-endpoints")
		}
	} else if endsInNumber(host) {
		// 127.1, 2130706433, 0x7f.0.0.1, 0177.0.0.1: not dotted quads to
		// netip, but IPv4 addresses to browsers (WHATWG URL) and inet_aton.
		return fmt.Errorf("is an IP address in a non-standard form; write it as a dotted quad")
	}
	return nil
}

// endsInNumber reports whether the last label of host is a decimal or 0x
// hexadecimal number, which the WHATWG URL standard parses as an IPv4
// address. No public DNS name ends in a numeric label.
func endsInNumber(host string) bool {
	last := host[strings.LastIndexByte(host, '.')+1:]
	if last == "" {
		return false
	}
	if strings.HasPrefix(last, "0x") {
		last = last[2:]
		for i := 0; i < len(last); i++ {
			c := last[i]
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
				return false
			}
		}
		return true
	}
	for i := 0; i < len(last); i++ {
		if last[i] < '0' || last[i] > '9' {
			return false
		}
	}
	return true
}

// IsPublicIP reports whether ip is a globally routable unicast address.
func IsPublicIP(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() {
		return false
	}
	for _, p := range nonPublicPrefixes {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

// nonPublicPrefixes are special-purpose ranges that netip's predicates do
// not cover (RFC 6890 and friends).
var nonPublicPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"), // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"), // NAT64 can reach IPv4 private space
	netip.MustParsePrefix("2001:db8::/32"),
}
