package p2p

import (
	"context"

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
