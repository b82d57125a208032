package p2p

import (
	"fmt"
	"net"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	manet "github.com/multiformats/go-multiaddr/net"

	"github.com/agentsite/agentsite/p2p/intake"
)

// Admission is who may place listings here, and how many (p2p/intake
// owns it and the state it drives).
type Admission = intake.Admission

// The host's side of the intake (p2p/intake owns the policy): what the
// policy needs to know of connections, and the heartbeats' view of it.

// ParsePeerIDs checks a list of peer IDs from the command line (--block-peer,
// --trust-peer).
func ParsePeerIDs(flag string, ids []string) error {
	for _, s := range ids {
		if _, err := peer.Decode(s); err != nil {
			return fmt.Errorf("--%s %q is not a peer ID (%w); copy one from /nodes or a listing's host", flag, s, err)
		}
	}
	return nil
}

// ipGroup is the IP group of p's connection: the /24 of an IPv4 address,
// the /48 of an IPv6 one, "" when not connected.
func ipGroup(nw network.Network, p peer.ID) string {
	for _, c := range nw.ConnsToPeer(p) {
		ip, err := manet.ToIP(c.RemoteMultiaddr())
		if err != nil {
			continue
		}
		if v4 := ip.To4(); v4 != nil {
			return v4.Mask(net.CIDRMask(24, 32)).String() + "/24"
		}
		return ip.Mask(net.CIDRMask(48, 128)).String() + "/48"
	}
	return ""
}

// knownPublisher reports whether p is a publisher this node hears: a
// heartbeat within the hour, a connection now, or itself.
func (n *Node) knownPublisher(p peer.ID) bool {
	if p == n.host.ID() || n.in.WasHeard(p.String(), n.now()) {
		return true
	}
	return n.host.Network().Connectedness(p) == network.Connected
}

// AdmissionPenalty is p's current admission penalty (what it loses in
// GossipSub's application score), for operators and tests.
func (n *Node) AdmissionPenalty(p peer.ID) float64 { return -n.in.Score(p) }

// heartbeatGate is the intake as the heartbeat protocol sees it
// (heartbeat.Gate): the operator's blocks and the gater's, the
// forwarders' allowances, and refusals counted on path "heartbeat".
type heartbeatGate struct{ n *Node }

func (g heartbeatGate) Blocked(author peer.ID) bool {
	return g.n.gater.Blocked(author) || g.n.in.Blocked(author.String())
}

func (g heartbeatGate) AllowRelayed(from peer.ID, now time.Time) bool {
	return g.n.in.AllowRelayedHeartbeat(from, g.n.cfg.HeartbeatInterval, now)
}

func (g heartbeatGate) Known(author peer.ID) bool { return g.n.knownPublisher(author) }

func (g heartbeatGate) Introduce(key string, from peer.ID, now time.Time) error {
	return g.n.in.Introduce(key, from, ipGroup(g.n.host.Network(), from), now)
}

func (g heartbeatGate) Heard(author string, now time.Time) { g.n.in.Hear(author, now) }

func (g heartbeatGate) Reject(from peer.ID, err error) { g.n.in.Reject(pathHeartbeat, from, err) }

func (g heartbeatGate) Refuse(from peer.ID, err error) { g.n.in.Refuse(pathHeartbeat, from, err) }

func (g heartbeatGate) Flood(from peer.ID) { g.n.in.Refuse(pathHeartbeat, from, intake.ErrFlood) }

func (g heartbeatGate) Late() { g.n.in.Outdated(pathHeartbeat, intake.ErrReplay) }

// PeerScore is p's GossipSub peer score as of the last snapshot (at most
// intake.ScoreInspectPeriod old), and whether the router tracks p at all. Operators
// and tests use it to see a misbehaving peer sink below the graylist
// threshold (-80): every invalid message costs it 100.
func (n *Node) PeerScore(p peer.ID) (float64, bool) { return n.scores.Get(p) }
