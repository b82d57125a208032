package p2p

import (
	"context"

	"github.com/agentsite/agentsite/agent"
)

// Cache is what the network side needs from the node's listing cache. The
// store satisfies it through store.Sink; p2p never imports the store.
type Cache interface {
	Sink
	// Envelopes pages through the signed envelopes of unexpired listings
	// (tombstones included) in first-seen order after the position after,
	// optionally only those tagged tag. next is 0 on the last page.
	Envelopes(ctx context.Context, after int64, tag string, limit int) (envs [][]byte, next int64, err error)
	// NodeSeen records a verified heartbeat: the node is online, and so are
	// the listings it hosts.
	NodeSeen(ctx context.Context, hb agent.Heartbeat) error
	// LocalAgents is the agents this node hosts: id → name.
	LocalAgents(ctx context.Context) (map[string]string, error)
	// SetHealth records the health of agents hosted by hostPeerID (id →
	// health), from its heartbeat or this node's own: only listings whose
	// host is hostPeerID change, agents not known yet are skipped.
	SetHealth(ctx context.Context, hostPeerID string, health map[string]agent.Health) error
}
