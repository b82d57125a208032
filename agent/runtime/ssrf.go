package runtime

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// privateRefused ends the message for a private host. It is shown to
// users, so it names no command-line flag: how an operator allows private
// backends belongs in the operator docs (docs/configuration.md, -help).
const privateRefused = "this node does not allow private addresses for agent backends"

// CheckHost refuses URLs whose host is not on the public internet: IP
// literals in any special-purpose range (see specialRanges) and names like
// localhost. It is the registration-time half of the SSRF guard; the
// outbound HTTP client checks again after DNS resolution, since a
// public-looking name can resolve to a private address. allowPrivate is
// --allow-private-endpoints: local names and the operator's own networks
// pass, but addresses no backend can live at (multicast, unspecified,
// documentation, ...) are refused even then.
func CheckHost(raw string, allowPrivate bool) error {
	return Policy{Private: allowPrivate}.CheckURL(raw)
}

// CheckURL is CheckHost under p: a literal address passes when p admits
// it at the URL's port, a local name (localhost) when p admits loopback
// at that port.
func (p Policy) CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("is not a URL")
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	port := urlPort(u)
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		if p.Private || p.Allow.Contains(netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port)) || p.Allow.Contains(netip.AddrPortFrom(netip.IPv6Loopback(), port)) {
			return nil
		}
		return fmt.Errorf("points at a local or internal host; %s", privateRefused)
	}
	if !p.Private && (strings.HasSuffix(host, ".internal") || strings.HasSuffix(host, ".local")) {
		return fmt.Errorf("points at a local or internal host; %s", privateRefused)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if err := p.CheckAddrPort(netip.AddrPortFrom(ip, port)); err != nil {
			var ae *addrError
			if errors.As(err, &ae) && ae.row.reach == reachPrivate {
				return fmt.Errorf("points at %v; %s", err, privateRefused)
			}
			return fmt.Errorf("points at %v", err)
		}
	} else if endsInNumber(host) {
		// 127.1, 2130706433, 0x7f.0.0.1, 0177.0.0.1: not dotted quads to
		// netip, but IPv4 addresses to browsers (WHATWG URL) and inet_aton.
		return fmt.Errorf("is an IP address in a non-standard form; write it as a dotted quad")
	}
	return nil
}

// urlPort is the port u names, or its scheme's (0 if neither says).
func urlPort(u *url.URL) uint16 {
	if n, err := strconv.ParseUint(u.Port(), 10, 16); err == nil {
		return uint16(n)
	}
	switch u.Scheme {
	case "https":
		return 443
	case "http":
		return 80
	}
	return 0
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

// CheckAddr refuses every address that is not global unicast: any
// special-purpose range (specialRanges) and IPv6 outside 2000::/3. With
// allowPrivate the operator's own networks (loopback, private use,
// unique-local, link-local, CGNAT) pass. It is the one rule both halves of
// the SSRF guard apply.
func CheckAddr(ip netip.Addr, allowPrivate bool) error {
	ip = ip.WithZone("") // prefixes never contain zoned addresses
	if !ip.IsValid() {
		return errors.New("an invalid address")
	}
	row, ok := lookupSpecial(ip)
	if !ok {
		if ip.Is6() && !globalUnicast.Contains(ip) {
			return &addrError{ip: ip, row: specialRange{prefix: globalUnicast, name: "outside the global unicast space"}}
		}
		return nil
	}
	switch {
	case row.reach == reachEmbedded:
		b := ip.As16()
		return CheckAddr(netip.AddrFrom4([4]byte(b[12:])), allowPrivate)
	case row.reach == reachTranslated:
		b := ip.As16()
		if err := CheckAddr(netip.AddrFrom4([4]byte(b[12:])), false); err != nil {
			return &addrError{ip: ip, row: row, inner: err}
		}
		return nil
	case row.reach == reachPrivate && allowPrivate:
		return nil
	}
	return &addrError{ip: ip, row: row}
}

// addrError names the range that refused an address, so an owner sees why.
type addrError struct {
	ip    netip.Addr
	row   specialRange
	inner error // why the IPv4 address a translation prefix carries is refused
}

func (e *addrError) Error() string {
	if e.inner != nil {
		return fmt.Sprintf("%s, which is in %s (%s) and carries %v", e.ip, e.row.prefix, e.row.name, e.inner)
	}
	return fmt.Sprintf("%s, which is in %s (%s), not a public address", e.ip, e.row.prefix, e.row.name)
}
