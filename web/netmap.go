package web

import (
	"math"
	"slices"
	"strconv"
)

// The network picture of /nodes: this node in the centre, the peers it
// knows on a circle around it, a solid line to each connected peer and a
// dashed one to peers heard from (heartbeats) but not connected now, a
// dotted one to peers connected only through a relay. It is
// plain server-rendered SVG: no script, and it scales with the page.
const (
	netMapWidth   = 560 // the SVG's viewBox
	netMapHeight  = 420
	netMapRadius  = 150 // of the circle the peers sit on
	netMapMaxPeer = 24  // peers drawn; the rest are counted
)

// NetPeer is one peer as the network picture needs it.
type NetPeer struct {
	PeerID    string
	Status    string // online | stale | offline; "" when only connected
	Connected bool   // a live libp2p connection from this node now
	Relayed   bool   // connected only through a relay (no direct connection)
	Agents    int
	// Label is the node's name as the pages show it ("node-b"); "" draws
	// NodeName(PeerID).
	Label string
}

// netLabel is a drawn node's label, short enough to stay in the picture.
func netLabel(p NetPeer) string {
	s := p.Label
	if s == "" {
		s = NodeName(p.PeerID)
	}
	if r := []rune(s); len(r) > 16 {
		s = string(r[:15]) + "…"
	}
	return s
}

// NetMap is the laid-out picture.
type NetMap struct {
	Width  int
	Height int
	Self   NetMapNode
	Peers  []NetMapNode
	Hidden int // peers not drawn
}

// Relayed reports whether some drawn peer is connected only through a
// relay (the legend then explains the dotted line).
func (m NetMap) Relayed() bool {
	return slices.ContainsFunc(m.Peers, func(p NetMapNode) bool { return p.Connected && p.Relayed })
}

// NetMapNode is one drawn node.
type NetMapNode struct {
	NetPeer
	X, Y   float64
	LX, LY float64 // label position, outside the circle
	Anchor string  // text-anchor of the label
}

// NewNetMap lays out self and peers (in the given order; connected ones
// should come first so they are the ones drawn when there are many).
func NewNetMap(self NetPeer, peers []NetPeer) NetMap {
	cx, cy := float64(netMapWidth)/2, float64(netMapHeight)/2
	m := NetMap{Width: netMapWidth, Height: netMapHeight, Self: NetMapNode{NetPeer: self, X: cx, Y: cy, LX: cx, LY: cy + 42, Anchor: "middle"}}
	if len(peers) == 0 {
		// This node alone: a small picture, not an empty circle.
		m.Height = 120
		m.Self.Y, m.Self.LY = 44, 100
		return m
	}
	if len(peers) > netMapMaxPeer {
		m.Hidden = len(peers) - netMapMaxPeer
		peers = peers[:netMapMaxPeer]
	}
	for i, p := range peers {
		a := -math.Pi/2 + 2*math.Pi*float64(i)/float64(len(peers))
		cos, sin := math.Cos(a), math.Sin(a)
		n := NetMapNode{NetPeer: p, X: cx + netMapRadius*cos, Y: cy + netMapRadius*sin}
		switch {
		case cos > 0.3:
			n.Anchor = "start"
			n.LX = n.X + 18
			n.LY = n.Y + 4
		case cos < -0.3:
			n.Anchor = "end"
			n.LX = n.X - 18
			n.LY = n.Y + 4
		default:
			n.Anchor, n.LX = "middle", n.X
			if sin < 0 {
				n.LY = n.Y - 20
			} else {
				n.LY = n.Y + 28
			}
		}
		m.Peers = append(m.Peers, n)
	}
	return m
}

// svgNum formats a coordinate.
func svgNum(f float64) string { return strconv.FormatFloat(math.Round(f*10)/10, 'f', -1, 64) }

// netNodeClass is the CSS class of a drawn node.
func netNodeClass(n NetMapNode) string {
	s := n.Status
	if s == "" {
		s = "online"
	}
	return "net-node net-" + s
}

// netEdgeClass is the CSS class of the line to a peer.
func netEdgeClass(n NetMapNode) string {
	switch {
	case n.Connected && n.Relayed:
		return "net-edge net-edge-connected net-edge-relayed"
	case n.Connected:
		return "net-edge net-edge-connected"
	}
	return "net-edge net-edge-heard"
}

// reachabilityWord is the reachability as one short phrase.
func reachabilityWord(r string) string {
	if r == ReachLocal {
		return "local network only"
	}
	return r
}

// ReachLocal is the reachability the /nodes page says for a node whose
// AutoNAT verdict is unknown and whose every address is loopback or
// private: it will stay unknown, and nodes outside its network cannot
// dial it.
const ReachLocal = "local"

// NodeName is the short name of a node, as agent cards say it ("node" and
// the last six characters of its peer id).
func NodeName(peerID string) string {
	if len(peerID) > 8 {
		return "node " + peerID[len(peerID)-6:]
	}
	return "node " + peerID
}

// netMapTitle is the picture's text alternative.
func netMapTitle(m NetMap) string {
	connected := 0
	for _, p := range m.Peers {
		if p.Connected {
			connected++
		}
	}
	n := len(m.Peers) + m.Hidden
	return "This node and " + strconv.Itoa(n) + " other " + nodesWord(n) + "; " + strconv.Itoa(connected) + " drawn as connected now."
}

// nodesWord is "node" or "nodes".
func nodesWord(n int) string {
	if n == 1 {
		return "node"
	}
	return "nodes"
}

// reachabilityText says how other nodes reach this one.
func reachabilityText(r string) string {
	switch r {
	case "public":
		return "public (other nodes can dial it)"
	case "private":
		return "private (behind NAT; reached through relays)"
	case ReachLocal:
		return "local network only"
	default:
		return "unknown (not determined yet)"
	}
}

// selfMapLabel is this node's label in the picture: its name, and that
// it is this one.
func selfMapLabel(p NetPeer) string {
	if p.Label == "" {
		return "this node"
	}
	return netLabel(p) + " (this node)"
}
