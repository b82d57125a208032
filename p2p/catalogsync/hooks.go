package catalogsync

import (
	"context"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/prometheus/client_golang/prometheus"
)

// What the host and its tests reach of a running sync besides the
// loops: a single pull over 1.1.0, the state the tests of the host look
// at, and the few knobs they turn.

// PageSize is the most records a page of either protocol holds (the wire
// contract, docs/architecture.md §3).
const PageSize = syncPageSize

// FeedSync pulls what changed in p's catalogue since this node's cursors
// for p, over 1.1.0, as one round of p's loop would (refused records are
// not passed over); it returns how many records changed the cache.
func (n *Service) FeedSync(ctx context.Context, p peer.ID) (int, error) {
	return n.feedSync(ctx, p, false, syncRoundOther)
}

// ServeFeed serves one 1.1.0 stream (Serve registers it for every
// stream; a test serves one it wrapped).
func (n *Service) ServeFeed(s network.Stream) { n.serveFeed(s) }

// Running is how many syncs run now (at most maxParallelSyncs).
func (n *Service) Running() int {
	n.syncs.mu.Lock()
	defer n.syncs.mu.Unlock()
	return len(n.syncs.sem)
}

// OwnPulled is how many peers' own listings were pulled (own.go).
func (n *Service) OwnPulled() int {
	n.syncs.mu.Lock()
	defer n.syncs.mu.Unlock()
	return len(n.syncs.ownPulled)
}

// MarkOwn notes that p's own listings are to be pulled, as adopting its
// head for a shard does.
func (n *Service) MarkOwn(p peer.ID) { n.syncs.markOwn(p) }

// SetAdoptWindow changes adoptWindow for this node (tests: 0 puts every
// later peer past the window).
func (n *Service) SetAdoptWindow(d time.Duration) {
	n.syncs.mu.Lock()
	defer n.syncs.mu.Unlock()
	n.syncs.adopt = d
}

// Limited is the counter of the pages and streams held back from peers
// for proto and action (paced, refused, busy):
// agentsite_p2p_sync_serve_limited_total.
func (n *Service) Limited(proto, action string) prometheus.Counter {
	return n.serving.limited.WithLabelValues(proto, action)
}
