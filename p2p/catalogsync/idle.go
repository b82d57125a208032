package catalogsync

import "time"

// syncFanout is how many periodic syncs a node starts per SyncInterval,
// whatever the number of its peers (docs/architecture.md "Idle cost"):
// each connected peer's change feed is asked for again every
// SyncInterval times the peers over syncFanout, so an idle round costs a
// node about syncFanout head requests out and as many served, not one
// each way per peer (at 50 nodes, 49 of each every 30 s, most of the sync
// protocol's idle bytes and its store reads). A record lost in gossip is
// still repaired within about SyncInterval/syncFanout: every peer that
// has it can give it, and one of them is asked that often.
const syncFanout = 4

// syncSpacing is the time between two periodic syncs with one peer, before
// jitter.
func (n *Service) syncSpacing() time.Duration {
	peers := len(n.host.Network().Peers())
	return n.cfg.SyncInterval * time.Duration(max(1, (peers+syncFanout-1)/syncFanout))
}
