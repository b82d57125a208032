package p2p

import (
	"sync"

	"github.com/libp2p/go-libp2p/core/control"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
)

// Gater is the node's connection gater: it refuses peers that were blocked
// for misbehaving (and, in tests, peers on the other side of a simulated
// partition).
type Gater struct {
	mu      sync.RWMutex
	blocked map[peer.ID]bool
}

func newGater() *Gater { return &Gater{blocked: map[peer.ID]bool{}} }

// Block refuses all future connections with p.
func (g *Gater) Block(p peer.ID) {
	g.mu.Lock()
	g.blocked[p] = true
	g.mu.Unlock()
}

// Unblock allows p again.
func (g *Gater) Unblock(p peer.ID) {
	g.mu.Lock()
	delete(g.blocked, p)
	g.mu.Unlock()
}

// Blocked reports whether p is blocked.
func (g *Gater) Blocked(p peer.ID) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.blocked[p]
}

func (g *Gater) InterceptPeerDial(p peer.ID) bool { return !g.Blocked(p) }

func (g *Gater) InterceptAddrDial(p peer.ID, _ ma.Multiaddr) bool { return !g.Blocked(p) }

func (g *Gater) InterceptAccept(network.ConnMultiaddrs) bool { return true }

func (g *Gater) InterceptSecured(_ network.Direction, p peer.ID, _ network.ConnMultiaddrs) bool {
	return !g.Blocked(p)
}

func (g *Gater) InterceptUpgraded(network.Conn) (bool, control.DisconnectReason) { return true, 0 }
