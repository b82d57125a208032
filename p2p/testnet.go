//go:build agentsite_testnet

package p2p

import (
	"fmt"
	"net"
	"slices"
	"strings"

	manet "github.com/multiformats/go-multiaddr/net"
)

// TreatAsPublic makes libp2p count addresses in the given IPv4 or IPv6
// prefixes as public, by removing them from go-multiaddr's list of
// unroutable ranges (manet.Unroutable4/6). NAT tests build their
// "internet" out of documentation prefixes (198.51.100.0/24), which
// libp2p otherwise never treats as reachable from the internet.
//
// It rewrites another library's package variables, so it changes every
// host in the process, and it exists only in binaries built with
// -tags agentsite_testnet (the NAT tests build agentsite that way and run
// one node per process). There is no per-host way: go-libp2p v0.52 calls
// manet.IsPublicAddr directly, with no option, in the address manager and
// its AutoNAT v2 reachability tracker (only public addresses are probed),
// the AutoNAT v2 client and server, AutoNAT v1's dial policy, identify's
// observed addresses, hole punching's address exchange, autorelay's
// address cleanup and the swarm's black-hole detector; GossipSub's peer
// exchange does too. (The relay service's WithReservationAddressFilter and
// the DHT's filter options are per host, but alone they change nothing.)
// Call it before starting any host.
func TreatAsPublic(prefixes []string) error {
	for _, p := range prefixes {
		_, want, err := net.ParseCIDR(strings.TrimSpace(p))
		if err != nil {
			return fmt.Errorf("public prefix %q: %w", p, err)
		}
		drop := func(n *net.IPNet) bool {
			return n.IP.Equal(want.IP) && n.Mask.String() == want.Mask.String()
		}
		manet.Unroutable4 = slices.DeleteFunc(slices.Clone(manet.Unroutable4), drop)
		manet.Unroutable6 = slices.DeleteFunc(slices.Clone(manet.Unroutable6), drop)
	}
	return nil
}
