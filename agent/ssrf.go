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
	}
	return nil
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
