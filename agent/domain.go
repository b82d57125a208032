package agent

import (
	"fmt"
	"strings"
)

// MaxHeartbeatDomains bounds the verified domains one heartbeat carries
// (Heartbeat.Domains), part of the wire contract: a node claims at most
// this many (agent/verify.MaxDomains is the same number), and every node
// refuses a heartbeat with more.
const MaxHeartbeatDomains = 8

// NormalizeDomain checks a claimed domain and returns its one spelling: a
// lower-case DNS name of at least two labels, letters, digits and hyphens
// (IDNs in their xn-- form), without a trailing dot. It lives here, not in
// agent/verify, because the heartbeat's validation needs it too. An IP
// literal is no domain (a proof of one would be a fetch from whatever
// address a stranger names), nor is a name whose last label a URL parser
// reads as a number (127.1, 0x7f), nor one under a special-use TLD that
// only means something inside one network (localhost, local, internal,
// arpa, invalid, onion).
func NormalizeDomain(d string) (string, error) {
	d = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(d)), ".")
	if len(d) < 3 || len(d) > 253 {
		return "", fmt.Errorf("%q is not a domain name", d)
	}
	labels := strings.Split(d, ".")
	if len(labels) < 2 {
		return "", fmt.Errorf("%q is not a domain name: give a name like example.org", d)
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return "", fmt.Errorf("%q is not a domain name", d)
		}
		for _, c := range l {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return "", fmt.Errorf("%q is not a domain name (letters, digits and hyphens; IDNs in their xn-- form)", d)
			}
		}
	}
	if last := labels[len(labels)-1]; numericLabel(last) {
		return "", fmt.Errorf("%q is an IP address or ends in a number, not a domain name", d)
	}
	switch labels[len(labels)-1] {
	case "localhost", "local", "internal", "arpa", "invalid", "onion":
		return "", fmt.Errorf("%q is under a special-use name that is not public", d)
	}
	return d, nil
}

// CheckHeartbeatDomains checks a heartbeat's domains: at most
// MaxHeartbeatDomains, each already in NormalizeDomain's spelling, none
// twice. A receiver still proves each one itself (agent/verify.Claims):
// a signed claim says only what the sender says.
func CheckHeartbeatDomains(domains []string) error {
	if len(domains) > MaxHeartbeatDomains {
		return fmt.Errorf("%w: %d domains, at most %d", ErrTooLarge, len(domains), MaxHeartbeatDomains)
	}
	for i, d := range domains {
		n, err := NormalizeDomain(d)
		if err != nil {
			return err
		}
		if n != d {
			return fmt.Errorf("domain %q is not normalised (%q)", d, n)
		}
		for _, e := range domains[:i] {
			if e == d {
				return fmt.Errorf("domain %q twice", d)
			}
		}
	}
	return nil
}
