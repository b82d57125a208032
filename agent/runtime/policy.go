package runtime

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// Purpose is why the node dials out. Each purpose has its own policy
// (Outbound.Policy): the operator may open its own networks to the agent
// backends it runs, never to a URL a caller or a peer chose.
type Purpose string

// The purposes of the node's outbound calls.
const (
	// PurposeBackend: an agent's backend (model endpoint, MCP server,
	// webhook, A2A agent), registered by an owner on this node.
	PurposeBackend Purpose = "backend"
	// PurposeImport: `agentsite import` reading remote catalogues, server
	// cards and agent cards, and the URLs they point to.
	PurposeImport Purpose = "import"
	// PurposePush: an A2A push notification to the URL a caller gave.
	PurposePush Purpose = "push"
	// PurposeProof: fetching a domain's proof of a verified-publisher claim
	// that a peer made.
	PurposeProof Purpose = "proof"
	// PurposeCard: fetching an agent card on behalf of someone else.
	PurposeCard Purpose = "card"
	// PurposeReferral: an address this node hands to clients as another
	// registry to ask.
	PurposeReferral Purpose = "referral"
)

// Purposes is every purpose, in the order the docs list them.
var Purposes = []Purpose{PurposeBackend, PurposeImport, PurposePush, PurposeProof, PurposeCard, PurposeReferral}

// Outbound is the operator's outbound policy, built once from the flags:
// what each purpose may reach besides the public internet.
type Outbound struct {
	// AllowPrivate is --allow-private-endpoints: backends may reach all of
	// the operator's own networks. The broad switch; Allow is the narrow one.
	AllowPrivate bool
	// Allow is --allow-endpoint: these endpoints of the operator's own
	// networks are open to backends and imports, and nothing else is.
	Allow AllowList
	// AllowPush is --allow-push-endpoint: these endpoints of the operator's
	// own networks may receive A2A push notifications (a webhook receiver
	// the operator runs, a conformance kit's). Nothing else private may.
	AllowPush AllowList
	// TestAllow opens these endpoints to every purpose. Only tests set it:
	// their proof servers and push receivers can live nowhere but on
	// loopback. No flag sets it.
	TestAllow AllowList
}

// Policy is what p may reach.
func (o Outbound) Policy(p Purpose) Policy {
	allow := append(AllowList(nil), o.TestAllow...)
	switch p {
	case PurposeBackend:
		return Policy{Private: o.AllowPrivate, Allow: append(allow, o.Allow...)}
	case PurposeImport:
		return Policy{Allow: append(allow, o.Allow...)}
	case PurposePush:
		return Policy{Allow: append(allow, o.AllowPush...)}
	default:
		return Policy{Allow: allow}
	}
}

// Policy is what one purpose's calls may reach. The zero Policy reaches
// the public internet only.
type Policy struct {
	// Private admits the operator's own networks: loopback, private use,
	// unique-local, link-local and shared (CGNAT) space.
	Private bool
	// Allow admits these endpoints of the operator's own networks.
	Allow AllowList
}

// CheckAddrPort refuses ap unless it is public, or of the operator's own
// networks and admitted by p. Addresses no server lives at (unspecified,
// multicast, documentation, cloud metadata, 6to4, NAT64 of a non-public
// address, ...) are refused whatever p says.
func (p Policy) CheckAddrPort(ap netip.AddrPort) error {
	err := CheckAddr(ap.Addr(), p.Private)
	if err == nil {
		return nil
	}
	var ae *addrError
	if errors.As(err, &ae) && ae.row.reach == reachPrivate && p.Allow.Contains(netip.AddrPortFrom(ae.ip, ap.Port())) {
		return nil
	}
	return err
}

// SpecialAddr reports whether ip is anything but a public address: every
// special-purpose range, with IPv4 inside IPv4-mapped and NAT64 addresses
// judged, and IPv6 outside global unicast. It is the guard's rule for
// addresses that no policy opens (referral targets, addresses peers
// announce).
func SpecialAddr(ip netip.Addr) bool { return CheckAddr(ip, false) != nil }

// AllowEntry admits one endpoint (an address and port) or one network
// (a prefix, any port) of the operator's.
type AllowEntry struct {
	Prefix netip.Prefix
	Port   uint16 // 0: any port
}

// String is the entry as --allow-endpoint takes it.
func (e AllowEntry) String() string {
	if e.Port == 0 {
		return e.Prefix.String()
	}
	return netip.AddrPortFrom(e.Prefix.Addr(), e.Port).String()
}

// AllowList is the operator's --allow-endpoint entries.
type AllowList []AllowEntry

// Contains reports whether an entry admits ap.
func (l AllowList) Contains(ap netip.AddrPort) bool {
	ip := ap.Addr().WithZone("").Unmap()
	for _, e := range l {
		if e.Prefix.Contains(ip) && (e.Port == 0 || e.Port == ap.Port()) {
			return true
		}
	}
	return false
}

// admitsURL reports whether u's host is an address (or localhost) that an
// entry admits at u's port: the operator's own endpoint, which may speak
// plain http.
func (l AllowList) admitsURL(u *url.URL) bool {
	host, port := strings.ToLower(u.Hostname()), urlPort(u)
	if host == "localhost" {
		return l.Contains(netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port)) || l.Contains(netip.AddrPortFrom(netip.IPv6Loopback(), port))
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && l.Contains(netip.AddrPortFrom(ip, port))
}

// ParseAllowEntry reads one --allow-endpoint value: IP:port ([IPv6]:port
// for IPv6), localhost:port (both loopback addresses), or a CIDR prefix
// (every port). An entry must lie in the operator's own networks: a
// public address needs none, and the ranges no backend lives at (cloud
// metadata, unspecified, multicast, ...) cannot be opened.
func ParseAllowEntry(s string) ([]AllowEntry, error) {
	s = strings.TrimSpace(s)
	var out []AllowEntry
	switch {
	case strings.Contains(s, "/"):
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("%q is not a CIDR prefix (10.0.0.0/8, fd00::/8)", s)
		}
		out = append(out, AllowEntry{Prefix: p.Masked()})
	default:
		host, portText, ok := cutPort(s)
		if !ok {
			return nil, fmt.Errorf("%q is neither IP:port (127.0.0.1:11434, [::1]:11434) nor a CIDR prefix (10.0.0.0/8)", s)
		}
		port, err := strconv.ParseUint(portText, 10, 16)
		if err != nil || port == 0 {
			return nil, fmt.Errorf("%q: the port must be 1-65535", s)
		}
		if strings.EqualFold(host, "localhost") {
			return []AllowEntry{
				{Prefix: netip.PrefixFrom(netip.MustParseAddr("127.0.0.1"), 32), Port: uint16(port)},
				{Prefix: netip.PrefixFrom(netip.IPv6Loopback(), 128), Port: uint16(port)},
			}, nil
		}
		ip, err := netip.ParseAddr(host)
		if err != nil || ip.Zone() != "" {
			return nil, fmt.Errorf("%q: write the address, not a name (the guard checks the address it dials): 127.0.0.1:11434 or [::1]:11434", s)
		}
		ip = ip.Unmap()
		out = append(out, AllowEntry{Prefix: netip.PrefixFrom(ip, ip.BitLen()), Port: uint16(port)})
	}
	for _, e := range out {
		if err := e.checkPrivate(); err != nil {
			return nil, fmt.Errorf("%q: %w", s, err)
		}
	}
	return out, nil
}

// checkPrivate refuses an entry that is not wholly inside one range of the
// operator's own networks. Addresses inside it that no policy opens (a
// cloud metadata address in link-local space) stay refused: the guard
// admits an allowed address only if its own range is a private one.
func (e AllowEntry) checkPrivate() error {
	p := e.Prefix
	if p.Addr().Is4In6() {
		return errors.New("write IPv4 networks as IPv4 (127.0.0.0/8)")
	}
	row, ok := lookupSpecial(p.Addr())
	if !ok || row.reach != reachPrivate || row.prefix.Bits() > p.Bits() {
		return errors.New("only addresses of the operator's own networks (loopback, private use, unique-local, link-local, 100.64.0.0/10) can be allowed; public ones need no entry, and cloud metadata, unspecified, multicast and translated addresses none can open")
	}
	return nil
}

// cutPort splits host:port, with IPv6 in brackets.
func cutPort(s string) (host, port string, ok bool) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return "", "", false
	}
	host, port = s[:i], s[i+1:]
	if strings.HasPrefix(host, "[") != strings.HasSuffix(host, "]") {
		return "", "", false
	}
	if strings.HasPrefix(host, "[") {
		host = host[1 : len(host)-1]
	} else if strings.Contains(host, ":") {
		return "", "", false // IPv6 without brackets: where the port starts is a guess
	}
	return host, port, host != "" && port != ""
}
