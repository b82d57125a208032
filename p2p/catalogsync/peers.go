package catalogsync

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agentsite/agentsite/agent"
)

// maxSyncPeers bounds the per-peer sync table: the peers synced with most
// lately are kept, the one synced with longest ago is dropped for a new
// one. The connection manager keeps at most 400 connections; a table of a
// few hundred entries of a few maps each is well under a megabyte, and
// peers are adversaries: fresh identities cannot make it grow.
const maxSyncPeers = 256

// PeerSync is what catalogue sync brought from one peer since this
// process started: what an operator watches while a mirror fills, and
// what it reads when a fill stops short (GET /api/v1/node).
type PeerSync struct {
	Peer string
	// Bytes of sync answers read from the peer (1.1.0).
	Bytes int64
	// Records pulled, by result (new, known, held, raced, outdated,
	// refused, invalid: as agentsite_p2p_sync_records_total).
	Records map[string]int64
	// Refused are the records not taken, by reason: admission's (quota,
	// flood, blocked, untrusted), the record's (signature, expired, …,
	// replay), the store's (quota: the publisher's listings held; full:
	// --max-listings; store: a write failed).
	Refused map[string]int64
	// Filling is how many catalogue-sync shards are being filled from it
	// now.
	Filling int
	// Last is when a page of it was last taken.
	Last time.Time
}

// peerSyncTable keeps PeerSync per peer, bounded (maxSyncPeers).
type peerSyncTable struct {
	mu sync.Mutex
	m  map[peer.ID]*PeerSync
}

func newPeerSyncTable() *peerSyncTable {
	return &peerSyncTable{m: map[peer.ID]*PeerSync{}}
}

// entry is p's row, made (dropping the stalest row if the table is full);
// the caller holds mu.
func (t *peerSyncTable) entry(p peer.ID, now time.Time) *PeerSync {
	e := t.m[p]
	if e == nil {
		if len(t.m) >= maxSyncPeers {
			var oldest peer.ID
			for id, o := range t.m {
				if oldest == "" || o.Last.Before(t.m[oldest].Last) {
					oldest = id
				}
			}
			delete(t.m, oldest)
		}
		e = &PeerSync{Peer: p.String(), Records: map[string]int64{}, Refused: map[string]int64{}}
		t.m[p] = e
	}
	if now.After(e.Last) {
		e.Last = now
	}
	return e
}

// record counts a record of p's with result; reason, if not "", is why it
// was not taken.
func (t *peerSyncTable) record(p peer.ID, result, reason string, now time.Time) {
	if t == nil || p == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.entry(p, now)
	e.Records[result]++
	if reason != "" {
		e.Refused[reason]++
	}
}

// read counts bytes of p's answers.
func (t *peerSyncTable) read(p peer.ID, bytes int64, now time.Time) {
	if t == nil || p == "" || bytes <= 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.entry(p, now).Bytes += bytes
}

// rows copies the table, by peer id.
func (t *peerSyncTable) rows() []PeerSync {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]PeerSync, 0, len(t.m))
	for _, e := range t.m {
		c := *e
		c.Records, c.Refused = cloneCounts(e.Records), cloneCounts(e.Refused)
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b PeerSync) int { return strings.Compare(a.Peer, b.Peer) })
	return out
}

func cloneCounts(m map[string]int64) map[string]int64 {
	out := make(map[string]int64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// countSynced counts a record of a sync page from p: in the metrics by
// result and round, and in p's row of the per-peer table, with the reason
// it was not taken ("" when it was).
func (n *Service) countSynced(p peer.ID, round, result, reason string, now time.Time) {
	n.metrics.records.WithLabelValues(result, round).Inc()
	n.metrics.peers.record(p, result, reason, now)
}

// storeRefusal is the reason the cache gave for not taking a record of a
// sync page (Cache.PutAll's error).
func storeRefusal(err error) string {
	var full interface{ CatalogueFull() bool }
	switch {
	case errors.Is(err, agent.ErrOverQuota):
		return "quota"
	case errors.As(err, &full) && full.CatalogueFull():
		return "full"
	}
	return "store"
}

// Peers is what catalogue sync brought from each peer lately (at most
// maxSyncPeers of them), in peer id order, with the shards being filled
// from each now.
func (n *Service) Peers() []PeerSync {
	rows := n.metrics.peers.rows()
	filling := map[string]int{}
	n.syncs.mu.Lock()
	for _, p := range n.syncs.filling {
		filling[p.String()]++
	}
	n.syncs.mu.Unlock()
	for i := range rows {
		rows[i].Filling = filling[rows[i].Peer]
	}
	return rows
}

// Fill says how this node's catalogue is filling: shards being
// filled from some peer now, and shards read to their end from one (of
// syncShards), since the process started or as its cursors said.
func (n *Service) Fill() (filling, filled, shards int) {
	n.syncs.mu.Lock()
	defer n.syncs.mu.Unlock()
	for _, f := range n.syncs.filled {
		if f {
			filled++
		}
	}
	return len(n.syncs.filling), filled, syncShards
}
