package p2p

import (
	"context"
	"time"

	"github.com/agentsite/agentsite/agent"
)

// Cache is what the network side needs from the node's listing cache. The
// store satisfies it through store.Sink; p2p never imports the store.
type Cache interface {
	Sink
	// PutAll stores a page of verified, admitted records (catalogue sync)
	// as Put would each, in one store transaction when the store runs
	// them: envs[i] is recs[i]'s envelope, and changed[i] and errs[i] are
	// recs[i]'s outcome. One record refused or failing changes nothing of
	// the others.
	PutAll(ctx context.Context, recs []*agent.Record, envs [][]byte) (changed []bool, errs []error)
	// Envelopes pages through the signed envelopes of unexpired listings
	// (tombstones included) in first-seen order after the position after,
	// optionally only those tagged tag. next is 0 on the last page.
	Envelopes(ctx context.Context, after int64, tag string, limit int) (envs [][]byte, next int64, err error)
	// FeedCache is the change feed, for incremental sync.
	FeedCache
	// NodeSeen records a verified heartbeat: the node is online, and so are
	// the listings it hosts.
	NodeSeen(ctx context.Context, hb agent.Heartbeat) error
	// LocalCount counts the agents this node hosts, without reading them:
	// the heartbeat's agents_hosted.
	LocalCount(ctx context.Context) (int, error)
	// LocalNames is the names of those of ids that this node hosts (id →
	// name): the heartbeat reads them for the agents whose health changed,
	// never every hosted listing.
	LocalNames(ctx context.Context, ids []string) (map[string]string, error)
	// SetHealth records the health of agents hosted by hostPeerID (id →
	// health), from its heartbeat or this node's own: only listings whose
	// host is hostPeerID change, agents not known yet are skipped.
	SetHealth(ctx context.Context, hostPeerID string, health map[string]agent.Health) error
}

// FeedCache is what incremental catalogue sync (sync_feed.go) needs: the
// cache's change feed to serve, and where this node got to in each peer's,
// kept across restarts.
type FeedCache interface {
	// FeedID names the cache's change feed; a cursor in one feed means
	// nothing in another.
	FeedID(ctx context.Context) (string, error)
	// SyncChanges pages through the envelopes of the unexpired listings
	// (tombstones included) whose sync number (one per new envelope) is
	// above after and whose id is in [lo, hi) (hi "" is no bound), in that
	// order. next is the number to continue after; more says whether more
	// may follow now. limit 0 returns no envelopes and next = the feed's head (more:
	// not settled yet, numbers below it may still appear). A reader that
	// continues after next misses no change.
	SyncChanges(ctx context.Context, after int64, lo, hi string, limit int) (envs [][]byte, next int64, more bool, err error)
	// SyncCursor is where this node got to in peer's feed for shard
	// (feed "" when nowhere); complete says the shard was once read to
	// its end.
	SyncCursor(ctx context.Context, peer string, shard int) (feed string, after int64, complete bool, err error)
	// SetSyncCursor stores it.
	SetSyncCursor(ctx context.Context, peer string, shard int, feed string, after int64, complete bool) error
	// PruneSyncCursors drops the cursors not written since before.
	PruneSyncCursors(ctx context.Context, before time.Time) (int, error)
}
