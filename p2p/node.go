// Package p2p is AgentSite's network side: the libp2p host with the node's
// persistent identity, and (as the network grows) the DHT, GossipSub topics,
// catalogue sync and MCP over streams. Verified records go to a Sink; p2p
// never imports the store.
package p2p

import (
	"context"
	"fmt"
	"log/slog"
	"sort"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/net/connmgr"
	ma "github.com/multiformats/go-multiaddr"
)

// Config is the network configuration of a node.
type Config struct {
	// ListenAddrs are multiaddrs to listen on (TCP and QUIC).
	ListenAddrs []string
	// Bootstrap peers, full multiaddrs with /p2p/<id>.
	Bootstrap []string
	// UserAgent is announced through identify.
	UserAgent string
}

// Node is a running libp2p host.
type Node struct {
	host   host.Host
	key    crypto.PrivKey
	logger *slog.Logger
}

// New starts a libp2p host with the given identity.
func New(ctx context.Context, key crypto.PrivKey, cfg Config, logger *slog.Logger) (*Node, error) {
	for _, a := range cfg.ListenAddrs {
		if _, err := ma.NewMultiaddr(a); err != nil {
			return nil, fmt.Errorf("listen address %q is not a multiaddr (%w); use e.g. /ip4/0.0.0.0/tcp/0", a, err)
		}
	}
	cm, err := connmgr.NewConnManager(100, 400)
	if err != nil {
		return nil, fmt.Errorf("connection manager: %w", err)
	}
	h, err := libp2p.New(
		libp2p.Identity(key),
		libp2p.ListenAddrStrings(cfg.ListenAddrs...),
		libp2p.ConnectionManager(cm),
		libp2p.UserAgent(cfg.UserAgent),
		libp2p.DisableMetrics(),
	)
	if err != nil {
		return nil, fmt.Errorf("start libp2p host: %w", err)
	}
	return &Node{host: h, key: key, logger: logger}, nil
}

// Host is the underlying libp2p host.
func (n *Node) Host() host.Host { return n.host }

// PeerID is this node's peer ID as a string.
func (n *Node) PeerID() string { return n.host.ID().String() }

// Addrs returns the node's full multiaddrs (with /p2p/<id>), sorted, so
// others can bootstrap from it.
func (n *Node) Addrs() []string {
	info := peer.AddrInfo{ID: n.host.ID(), Addrs: n.host.Addrs()}
	full, err := peer.AddrInfoToP2pAddrs(&info)
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(full))
	for _, a := range full {
		out = append(out, a.String())
	}
	sort.Strings(out)
	return out
}

// PeerCount is the number of connected peers.
func (n *Node) PeerCount() int { return len(n.host.Network().Peers()) }

// Ready reports whether the host is listening.
func (n *Node) Ready() bool { return len(n.host.Addrs()) > 0 }

// Close stops the host.
func (n *Node) Close() error { return n.host.Close() }
