package main

import (
	"github.com/agentsite/agentsite/handlers"
	"github.com/agentsite/agentsite/handlers/apiwire"
	"github.com/agentsite/agentsite/p2p"
	"github.com/agentsite/agentsite/store"
)

// syncView tells the HTTP surfaces how the catalogue fills: p2p's
// catalogue sync (per peer, the shards) and the hosts' claims the Sink
// remembers from their heartbeats (handlers.SyncView).
type syncView struct {
	node *p2p.Node
	sink *store.Sink
}

var _ handlers.SyncView = syncView{}

// syncView is a's, or nil on a node without a network.
func (a *app) syncView() handlers.SyncView {
	if a.node == nil || a.sink == nil {
		return nil
	}
	return syncView{node: a.node, sink: a.sink}
}

// SyncProgress implements api.SyncProgress.
func (v syncView) SyncProgress() apiwire.SyncProgress {
	filling, filled, shards := v.node.SyncFill()
	out := apiwire.SyncProgress{FillingShards: filling, FilledShards: filled, Shards: shards, Peers: []apiwire.PeerSync{},
		QuotaRefusals: quotaRefusals(v.sink.QuotaRefusals(), maxQuotaRefusals)}
	for _, p := range v.node.SyncPeers() {
		out.Peers = append(out.Peers, apiwire.PeerSync{
			PeerID: p.Peer, Bytes: p.Bytes, Records: p.Records, Refused: p.Refused,
			FillingShards: p.Filling, LastSync: p.Last.UTC(),
		})
	}
	return out
}

// HostClaims implements api.SyncProgress and portal.Fill.
func (v syncView) HostClaims(ids []string) map[string]int { return v.sink.HostClaims(ids) }

// Announced implements portal.Fill.
func (v syncView) Announced() (hosts, listings int) { return v.sink.Announced() }

// Filling implements portal.Fill.
func (v syncView) Filling() bool {
	filling, _, _ := v.node.SyncFill()
	return filling > 0
}

// maxQuotaRefusals bounds the publishers GET /api/v1/node names as
// refused over their quota (the Sink remembers up to 10,000).
const maxQuotaRefusals = 50

// quotaRefusals is the wire form of the first max of rs (most refused
// first, as the Sink sorts them).
func quotaRefusals(rs []store.PublisherRefusal, max int) []apiwire.QuotaRefusal {
	out := make([]apiwire.QuotaRefusal, 0, min(len(rs), max))
	for _, r := range rs[:min(len(rs), max)] {
		out = append(out, apiwire.QuotaRefusal{Publisher: r.Publisher, Refused: r.Refused, Held: r.Held,
			Quota: r.Limit, Heard: r.Heard, Last: r.Last.UTC()})
	}
	return out
}
