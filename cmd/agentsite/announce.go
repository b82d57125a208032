package main

import (
	"fmt"
	"net/netip"

	ma "github.com/multiformats/go-multiaddr"

	"github.com/agentsite/agentsite/handlers"
)

// publicHTTPAddr is --public-url as the HTTP transport multiaddr a node
// announces with its libp2p addresses (/dns/<host>/tcp/<port>/tls/http for
// https), so that its heartbeats tell other nodes where its HTTP surfaces
// are: ARD's referrals (handlers/ard/referral.go) point at that address.
func publicHTTPAddr(publicURL string) (string, error) {
	u, err := handlers.ParsePublicURL(publicURL)
	if err != nil {
		return "", fmt.Errorf("--public-url %q %w", publicURL, err)
	}
	port, tail := u.Port(), "/http"
	if u.Scheme == "https" {
		tail = "/tls/http"
		if port == "" {
			port = "443"
		}
	} else if port == "" {
		port = "80"
	}
	host := "/dns/" + u.Hostname()
	if ip, err := netip.ParseAddr(u.Hostname()); err == nil {
		host = "/ip4/" + ip.String()
		if ip.Is6() {
			host = "/ip6/" + ip.String()
		}
	}
	addr := host + "/tcp/" + port + tail
	if _, err := ma.NewMultiaddr(addr); err != nil {
		return "", fmt.Errorf("--public-url %q makes no multiaddr (%s): %w", publicURL, addr, err)
	}
	return addr, nil
}

// announced is --announce plus, with --public-url, its HTTP address
// (unless an HTTP address is announced already).
func (c *Config) announced() []string {
	if c.PublicURL == "" {
		return c.Announce
	}
	for _, a := range c.Announce {
		if m, err := ma.NewMultiaddr(a); err == nil {
			if _, err := m.ValueForProtocol(ma.P_HTTP); err == nil {
				return c.Announce
			}
		}
	}
	addr, err := publicHTTPAddr(c.PublicURL)
	if err != nil {
		return c.Announce // validate refused it already
	}
	return append(append([]string(nil), c.Announce...), addr)
}
