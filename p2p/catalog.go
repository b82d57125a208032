package p2p

import (
	"context"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/p2p/catalogsync"
)

// The host's side of catalogue sync (p2p/catalogsync owns the protocol):
// its types under their old names, the node's methods that read it, and
// what it needs of the node (syncHost).

// SyncFeedProtocol is incremental catalogue sync, served next to
// SyncProtocol (1.0.0) for older nodes.
const SyncFeedProtocol = catalogsync.SyncFeedProtocol

type (
	// SyncServeLimits bounds what this node sends to the peers that pull
	// its catalogue (catalogsync.ServeLimits).
	SyncServeLimits = catalogsync.ServeLimits
	// PeerSync is what catalogue sync brought from one peer
	// (catalogsync.PeerSync).
	PeerSync = catalogsync.PeerSync
	// SyncCounts is what the catalogue sync of a node did so far
	// (catalogsync.SyncCounts).
	SyncCounts = catalogsync.SyncCounts
	// OwnCache is what the server of own pages needs of the cache
	// (catalogsync.OwnCache).
	OwnCache = catalogsync.OwnCache
	// FeedCache is what the change-feed sync needs of the cache
	// (catalogsync.FeedCache).
	FeedCache = catalogsync.FeedCache
)

// SyncFrom pulls p's catalogue (or, with tag, only listings with that tag)
// over the whole-catalogue protocol (catalogsync.Service.SyncFrom); it
// returns how many records changed the cache.
func (n *Node) SyncFrom(ctx context.Context, p peer.ID, tag string) (int, error) {
	return n.catalog.SyncFrom(ctx, p, tag)
}

// SyncRetriesPending is how many connected peers' first sync has not run
// yet or waits to be asked again (catalogsync.Service.RetriesPending).
func (n *Node) SyncRetriesPending() int { return n.catalog.RetriesPending() }

// SyncPeers is what catalogue sync brought from each peer lately
// (catalogsync.Service.Peers).
func (n *Node) SyncPeers() []PeerSync { return n.catalog.Peers() }

// SyncFill says how this node's catalogue is filling: shards being filled
// now, shards filled, of how many (catalogsync.Service.Fill).
func (n *Node) SyncFill() (filling, filled, shards int) { return n.catalog.Fill() }

// SyncCounts returns the node's catalogue sync counters
// (catalogsync.Service.Counts).
func (n *Node) SyncCounts() SyncCounts { return n.catalog.Counts() }

// syncHost is the node as catalogue sync sees it (catalogsync.Host).
type syncHost struct{ n *Node }

func (h syncHost) Go(f func(context.Context)) { h.n.goLoop(f) }

func (h syncHost) Blocked(p peer.ID) bool { return h.n.gater.Blocked(p) }

func (h syncHost) Verify(env []byte, now time.Time) (*agent.Record, error) {
	return verifyRecord(env, "", now)
}

func (h syncHost) CheckSeq(id string, seq uint64) error { return h.n.seqs.check(id, seq) }

func (h syncHost) Deliver(ctx context.Context, from peer.ID, rec *agent.Record, changed bool, err error) bool {
	return h.n.delivered(ctx, pathSync, from, rec, changed, err)
}

func (h syncHost) IPGroup(p peer.ID) string { return ipGroup(h.n.host.Network(), p) }
