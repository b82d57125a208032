package p2p

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
)

// The catalogue sync protocol (/agentsite/sync/1.0.0): on one stream the
// client sends newline-delimited JSON requests {after, tag, limit} and reads
// one JSON response {envelopes, next} for each, until next is 0. Every
// envelope is verified as if it came by gossip.
type syncRequest struct {
	After int64  `json:"after"`
	Tag   string `json:"tag,omitempty"`
	Limit int    `json:"limit"`
}

type syncResponse struct {
	Envelopes [][]byte `json:"envelopes"`
	Next      int64    `json:"next"`
}

const (
	syncPageSize     = 64
	maxSyncResponse  = syncPageSize*(16<<10)*4/3 + 64<<10 // base64 of a full page, with room
	maxSyncRequest   = 1 << 10
	syncStreamIdle   = 30 * time.Second
	syncTimeout      = 2 * time.Minute
	syncRepeatAfter  = 30 * time.Second
	maxParallelSyncs = 4
)

// serveSync answers catalogue pages from the cache.
func (n *Node) serveSync(s network.Stream) {
	defer s.Close()
	r := bufio.NewReaderSize(io.LimitReader(s, 1<<20), maxSyncRequest)
	enc := json.NewEncoder(s)
	for {
		_ = s.SetReadDeadline(time.Now().Add(syncStreamIdle))
		line, err := r.ReadSlice('\n')
		if err != nil {
			return
		}
		var req syncRequest
		if err := json.Unmarshal(line, &req); err != nil || req.After < 0 || len(req.Tag) > 64 {
			_ = s.Reset()
			return
		}
		limit := min(max(req.Limit, 1), syncPageSize)
		ctx, cancel := context.WithTimeout(n.ctx, 10*time.Second)
		envs, next, err := n.cfg.Cache.Envelopes(ctx, req.After, req.Tag, limit)
		cancel()
		if err != nil {
			n.logger.Warn("serving a sync page failed", "peer", s.Conn().RemotePeer(), "err", err)
			_ = s.Reset()
			return
		}
		_ = s.SetWriteDeadline(time.Now().Add(syncStreamIdle))
		if err := enc.Encode(syncResponse{Envelopes: envs, Next: next}); err != nil {
			return
		}
	}
}

// SyncFrom pulls p's catalogue (or, with tag, only listings with that tag),
// verifies each record and caches it. It returns how many records changed
// the cache.
func (n *Node) SyncFrom(ctx context.Context, p peer.ID, tag string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	s, err := n.host.NewStream(network.WithAllowLimitedConn(ctx, "sync"), p, protocol.ID(SyncProtocol))
	if err != nil {
		return 0, fmt.Errorf("open sync stream to %s: %w", p, err)
	}
	defer s.Close()
	_ = s.SetDeadline(time.Now().Add(syncTimeout))
	enc := json.NewEncoder(s)
	dec := json.NewDecoder(io.LimitReader(s, int64(n.cfg.MaxSyncRecords/syncPageSize+1)*maxSyncResponse))
	changed, seen := 0, 0
	var after int64
	for {
		if err := enc.Encode(syncRequest{After: after, Tag: tag, Limit: syncPageSize}); err != nil {
			return changed, fmt.Errorf("sync request to %s: %w", p, err)
		}
		var resp syncResponse
		if err := dec.Decode(&resp); err != nil {
			return changed, fmt.Errorf("sync response from %s: %w", p, err)
		}
		if len(resp.Envelopes) > syncPageSize {
			n.reject(pathSync, p, fmt.Errorf("page of %d records", len(resp.Envelopes)))
			return changed, fmt.Errorf("peer %s sent an oversized sync page", p)
		}
		for _, env := range resp.Envelopes {
			seen++
			rec, err := verifyRecord(env, "", n.now())
			if err != nil {
				n.reject(pathSync, p, err)
				continue
			}
			if err := n.seqs.check(rec.ID, rec.Seq); err != nil {
				n.outdated(pathSync, err)
				continue
			}
			if n.deliver(ctx, pathSync, rec, env) {
				changed++
			}
		}
		if resp.Next == 0 || resp.Next <= after || seen >= n.cfg.MaxSyncRecords {
			return changed, nil
		}
		after = resp.Next
	}
}

// syncTracker makes sure one peer is synced from at most once per
// syncRepeatAfter while it stays connected (identification completes once
// per connection, and a peer may hold several), and at most
// maxParallelSyncs at a time. A peer that disconnects is forgotten, so it
// is synced again as soon as it is back: a node returning from a partition
// or a restart brings what it published meanwhile, which gossip sent while
// it was cut off never delivered.
type syncTracker struct {
	mu   sync.Mutex
	last map[peer.ID]time.Time
	sem  chan struct{}
}

func newSyncTracker() *syncTracker {
	return &syncTracker{last: map[peer.ID]time.Time{}, sem: make(chan struct{}, maxParallelSyncs)}
}

// forget lets the next connection of p sync at once.
func (t *syncTracker) forget(p peer.ID) {
	t.mu.Lock()
	delete(t.last, p)
	t.mu.Unlock()
}

func (t *syncTracker) due(p peer.ID, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if last, ok := t.last[p]; ok && now.Sub(last) < syncRepeatAfter {
		return false
	}
	t.last[p] = now
	return true
}

// watchPeers starts a catalogue sync with every peer that completes
// identification and speaks the sync protocol: a new mirror fills up, and a
// node back from a partition catches up, without waiting for re-announcements.
func (n *Node) watchPeers() {
	sub, err := n.host.EventBus().Subscribe([]any{new(event.EvtPeerIdentificationCompleted), new(event.EvtPeerConnectednessChanged)})
	if err != nil {
		n.logger.Warn("cannot watch peers; catalogue sync on connect is off", "err", err)
		return
	}
	n.goLoop(func(ctx context.Context) {
		defer sub.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-sub.Out():
				if !ok {
					return
				}
				if c, ok := ev.(event.EvtPeerConnectednessChanged); ok {
					if c.Connectedness == network.NotConnected {
						n.syncs.forget(c.Peer)
					}
					continue
				}
				e := ev.(event.EvtPeerIdentificationCompleted)
				if !speaks(e.Protocols, SyncProtocol) || n.gater.Blocked(e.Peer) || !n.syncs.due(e.Peer, n.now()) {
					continue
				}
				n.goLoop(func(ctx context.Context) { n.syncWith(ctx, e.Peer) })
			}
		}
	})
}

func (n *Node) syncWith(ctx context.Context, p peer.ID) {
	select {
	case n.syncs.sem <- struct{}{}:
	case <-ctx.Done():
		return
	}
	defer func() { <-n.syncs.sem }()
	start := time.Now()
	changed, err := n.SyncFrom(ctx, p, "")
	if err != nil && ctx.Err() == nil {
		n.logger.Debug("catalogue sync failed", "peer", p, "err", err)
		return
	}
	if changed > 0 {
		n.logger.Info("catalogue sync", "peer", p, "records", changed, "took", time.Since(start).Round(time.Millisecond))
	}
}

func speaks(protos []protocol.ID, want string) bool {
	for _, p := range protos {
		if string(p) == want {
			return true
		}
	}
	return false
}
