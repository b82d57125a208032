package runtime

import "net/netip"

// reach says who may reach the addresses of a special-purpose range.
type reach int

const (
	// reachNever: no backend is dialled there, even with
	// --allow-private-endpoints (unspecified, multicast, broadcast,
	// documentation, benchmarking, reserved, tunnel and anycast ranges).
	reachNever reach = iota
	// reachPrivate: the operator's own networks (loopback, private use,
	// unique-local, link-local, shared CGNAT space), reachable only with
	// --allow-private-endpoints.
	reachPrivate
	// reachEmbedded: the range carries an IPv4 address in its low 32 bits
	// and is that address (IPv4-mapped); that address is judged instead.
	reachEmbedded
	// reachTranslated: the range carries an IPv4 address in its low 32
	// bits that a translator (NAT64) dials for us. Only a public address
	// passes: a private one would be the translator's network, never the
	// operator's, so no policy opens it.
	reachTranslated
)

// specialRange is one row of the IANA special-purpose address registries
// (RFC 6890 and later), or of the address architecture for the few IPv6
// ranges the registry does not list (multicast, site-local, IPv4-compatible).
type specialRange struct {
	prefix netip.Prefix
	name   string // the registry's name for the range
	reach  reach
}

// specialRanges is every special-purpose range. Where rows overlap the
// longest prefix decides (::1/128 inside ::/96). Rows IANA marks globally
// reachable that are protocol anycast or identifier space (AS112, AMT, PCP,
// TURN, ORCHIDv2, DETs) are refused too: no agent backend lives there, and
// refusing them costs nothing. IPv6 outside 2000::/3 that no row names is
// refused by CheckAddr as unallocated.
//
// Sources: iana.org/assignments/iana-ipv4-special-registry and
// iana-ipv6-special-registry (2024-10-22), RFC 4291 (multicast, site-local,
// IPv4-compatible), RFC 5771 (IPv4 multicast).
var specialRanges = []specialRange{
	// IPv4 special-purpose registry.
	{netip.MustParsePrefix("0.0.0.0/8"), `"this network"`, reachNever},
	{netip.MustParsePrefix("0.0.0.0/32"), `"this host on this network"`, reachNever},
	{netip.MustParsePrefix("10.0.0.0/8"), "private use", reachPrivate},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared address space (carrier-grade NAT)", reachPrivate},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback", reachPrivate},
	{netip.MustParsePrefix("169.254.0.0/16"), "link local", reachPrivate},
	// Cloud instance metadata services hand out credentials: never
	// reachable, though the ranges around them may be.
	{netip.MustParsePrefix("169.254.169.254/32"), "cloud instance metadata service", reachNever},
	{netip.MustParsePrefix("100.100.100.200/32"), "cloud instance metadata service (Alibaba)", reachNever},
	{netip.MustParsePrefix("172.16.0.0/12"), "private use", reachPrivate},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignments", reachNever},
	{netip.MustParsePrefix("192.0.0.0/29"), "IPv4 service continuity prefix", reachNever},
	{netip.MustParsePrefix("192.0.0.8/32"), "IPv4 dummy address", reachNever},
	{netip.MustParsePrefix("192.0.0.9/32"), "port control protocol anycast", reachNever},
	{netip.MustParsePrefix("192.0.0.10/32"), "TURN anycast", reachNever},
	{netip.MustParsePrefix("192.0.0.170/32"), "NAT64/DNS64 discovery", reachNever},
	{netip.MustParsePrefix("192.0.0.171/32"), "NAT64/DNS64 discovery", reachNever},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation (TEST-NET-1)", reachNever},
	{netip.MustParsePrefix("192.31.196.0/24"), "AS112-v4", reachNever},
	{netip.MustParsePrefix("192.52.193.0/24"), "AMT", reachNever},
	{netip.MustParsePrefix("192.88.99.0/24"), "deprecated 6to4 relay anycast", reachNever},
	{netip.MustParsePrefix("192.88.99.2/32"), "6a44 relay anycast", reachNever},
	{netip.MustParsePrefix("192.168.0.0/16"), "private use", reachPrivate},
	{netip.MustParsePrefix("192.175.48.0/24"), "direct delegation AS112 service", reachNever},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking", reachNever},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation (TEST-NET-2)", reachNever},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation (TEST-NET-3)", reachNever},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast", reachNever},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved", reachNever},
	{netip.MustParsePrefix("255.255.255.255/32"), "limited broadcast", reachNever},

	// IPv6 special-purpose registry.
	{netip.MustParsePrefix("::/128"), "unspecified address", reachNever},
	{netip.MustParsePrefix("::1/128"), "loopback", reachPrivate},
	{netip.MustParsePrefix("::ffff:0:0/96"), "IPv4-mapped address", reachEmbedded},
	// Globally reachable: with DNS64 an IPv6-only node reaches IPv4-only
	// backends through it, so the IPv4 address inside decides.
	{netip.MustParsePrefix("64:ff9b::/96"), "IPv4/IPv6 translation (NAT64)", reachTranslated},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "local-use IPv4/IPv6 translation", reachNever},
	{netip.MustParsePrefix("100::/64"), "discard-only", reachNever},
	{netip.MustParsePrefix("100:0:0:1::/64"), "dummy IPv6 prefix", reachNever},
	{netip.MustParsePrefix("2001::/23"), "IETF protocol assignments", reachNever},
	{netip.MustParsePrefix("2001::/32"), "Teredo", reachNever},
	{netip.MustParsePrefix("2001:1::1/128"), "port control protocol anycast", reachNever},
	{netip.MustParsePrefix("2001:1::2/128"), "TURN anycast", reachNever},
	{netip.MustParsePrefix("2001:1::3/128"), "DNS-SD service registration protocol anycast", reachNever},
	{netip.MustParsePrefix("2001:2::/48"), "benchmarking", reachNever},
	{netip.MustParsePrefix("2001:3::/32"), "AMT", reachNever},
	{netip.MustParsePrefix("2001:4:112::/48"), "AS112-v6", reachNever},
	{netip.MustParsePrefix("2001:10::/28"), "deprecated ORCHID", reachNever},
	{netip.MustParsePrefix("2001:20::/28"), "ORCHIDv2", reachNever},
	{netip.MustParsePrefix("2001:30::/28"), "drone remote ID entity tags", reachNever},
	{netip.MustParsePrefix("2001:db8::/32"), "documentation", reachNever},
	// 6to4 relays are deprecated anycast (RFC 7526) and forward to the
	// IPv4 address inside, which may be private: refuse the whole range.
	{netip.MustParsePrefix("2002::/16"), "6to4", reachNever},
	{netip.MustParsePrefix("2620:4f:8000::/48"), "direct delegation AS112 service", reachNever},
	{netip.MustParsePrefix("3fff::/20"), "documentation", reachNever},
	{netip.MustParsePrefix("5f00::/16"), "segment routing (SRv6) SIDs", reachNever},
	{netip.MustParsePrefix("fc00::/7"), "unique local", reachPrivate},
	{netip.MustParsePrefix("fd00:ec2::254/128"), "cloud instance metadata service (IPv6)", reachNever},
	{netip.MustParsePrefix("fe80::/10"), "link-local unicast", reachPrivate},

	// IPv6 addressing architecture (RFC 4291).
	{netip.MustParsePrefix("::/96"), "deprecated IPv4-compatible address", reachNever},
	{netip.MustParsePrefix("fec0::/10"), "deprecated site-local", reachNever},
	{netip.MustParsePrefix("ff00::/8"), "multicast", reachNever},
}

// globalUnicast is the only IPv6 space IANA allocates for global unicast.
var globalUnicast = netip.MustParsePrefix("2000::/3")

// lookupSpecial returns the most specific row holding ip.
func lookupSpecial(ip netip.Addr) (specialRange, bool) {
	var best specialRange
	found := false
	for _, r := range specialRanges {
		if r.prefix.Contains(ip) && (!found || r.prefix.Bits() > best.prefix.Bits()) {
			best, found = r, true
		}
	}
	return best, found
}
