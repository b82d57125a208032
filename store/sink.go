package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentsite/agentsite/agent"
)

// Sink connects the network side to the store: it turns verified records
// into listings (how every listing, local or from the network, enters the
// cache: DESIGN.md's "one code path for a listing became known"), serves the
// catalogue to syncing peers, and records heartbeats. It satisfies p2p.Cache.
type Sink struct {
	// Store is where listings and nodes go: in a node, the read cache, so
	// that every write through the Sink invalidates it.
	Store  Network
	SelfID string           // this node's peer ID: records hosted by it are Local
	Now    func() time.Time // nil: time.Now

	// hosts are the peer IDs known to have a row in the nodes table (nil
	// until first loaded from it), so that every host of an online listing
	// has one and Sweep can turn its listings stale.
	mu    sync.Mutex
	hosts map[string]bool
}

func (s *Sink) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

// Put upserts rec (already verified by the caller) with its envelope.
// changed is false when the store already has this or a newer seq.
func (s *Sink) Put(ctx context.Context, rec *agent.Record, envelope []byte) (changed bool, err error) {
	host := rec.HostPeerID()
	t := s.now()
	status := StatusOnline
	if !rec.ExpiresAt.After(t) {
		status = StatusOffline
	}
	err = s.Store.UpsertRecord(ctx, Listing{
		Record:     *rec,
		Envelope:   envelope,
		Status:     status,
		LastSeen:   t,
		HostPeerID: host,
		Local:      host == s.SelfID && rec.Publisher == s.SelfID, // only what we signed is ours to host
		UpdatedAt:  t,
	})
	if errors.Is(err, ErrStale) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if status == StatusOnline && !rec.Tombstone && host != s.SelfID {
		s.noteHost(ctx, host, t)
	}
	return true, nil
}

// noteHost gives a host we have never had a heartbeat from a row in the
// nodes table, as if it had sent one now. Without it, Sweep (which walks the
// nodes table) would never turn its listings stale: a record heard before
// its host's first heartbeat, or relayed by catalogue sync from a host that
// is gone, would stay online until it expires. Best effort: a failure here
// only delays staleness, so it does not fail the Put.
func (s *Sink) noteHost(ctx context.Context, host string, t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hosts == nil {
		nodes, err := s.Store.ListNodes(ctx)
		if err != nil {
			return
		}
		s.hosts = make(map[string]bool, len(nodes))
		for _, n := range nodes {
			s.hosts[n.PeerID] = true
		}
	}
	if s.hosts[host] {
		return
	}
	if err := s.Store.UpsertNode(ctx, Node{PeerID: host, LastHeartbeat: t, Status: StatusOnline}); err == nil {
		s.hosts[host] = true
	}
}

// Envelopes serves a page of the catalogue for sync.
func (s *Sink) Envelopes(ctx context.Context, after int64, tag string, limit int) ([][]byte, int64, error) {
	return s.Store.CatalogueEnvelopes(ctx, after, tag, limit, s.now())
}

// NodeSeen records a heartbeat: the node row is refreshed and its listings
// are online again.
func (s *Sink) NodeSeen(ctx context.Context, hb agent.Heartbeat) error {
	t := s.now()
	if err := s.Store.UpsertNode(ctx, Node{
		PeerID:        hb.PeerID,
		Addrs:         hb.Addrs,
		Version:       hb.Version,
		AgentsHosted:  hb.AgentsHosted,
		Load:          hb.Load,
		LastHeartbeat: t,
		Status:        StatusOnline,
	}); err != nil {
		return fmt.Errorf("upsert node: %w", err)
	}
	s.mu.Lock()
	if s.hosts != nil {
		s.hosts[hb.PeerID] = true
	}
	s.mu.Unlock()
	if _, err := s.Store.SetHostStatus(ctx, hb.PeerID, StatusOnline, t); err != nil {
		return fmt.Errorf("mark listings online: %w", err)
	}
	return nil
}

// LocalAgents is the agents this node hosts: id → name.
func (s *Sink) LocalAgents(ctx context.Context) (map[string]string, error) {
	ls, err := s.Store.ListLocal(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(ls))
	for _, l := range ls {
		out[l.Record.ID] = l.Record.Name
	}
	return out, nil
}

// SetHealth records the health a host reported for its agents (a verified
// heartbeat, or this node's own). Only the listings hosted by hostPeerID
// change: a claim about another node's agent, or about an agent not heard
// of yet, is dropped.
func (s *Sink) SetHealth(ctx context.Context, hostPeerID string, health map[string]agent.Health) error {
	if _, err := s.Store.SetHealth(ctx, hostPeerID, health); err != nil {
		return fmt.Errorf("set health of agents of %s: %w", hostPeerID, err)
	}
	return nil
}

// Sweep applies the liveness rules (DESIGN.md): a node whose heartbeats
// stopped for staleAfter (3 heartbeat intervals) and its listings turn
// stale; listings past expires_at turn offline. Local listings are left to
// the node itself (it re-signs them before they expire). A node silent for
// offlineAfter is shown offline in the nodes table.
func Sweep(ctx context.Context, st Network, selfID string, now time.Time, staleAfter, offlineAfter time.Duration) error {
	nodes, err := st.ListNodes(ctx)
	if err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	for _, n := range nodes {
		silent := now.Sub(n.LastHeartbeat)
		if n.PeerID == selfID || n.Status == StatusOffline || silent < staleAfter {
			continue
		}
		if n.Status == StatusStale && silent < offlineAfter {
			continue
		}
		n.Status = StatusStale
		if silent >= offlineAfter {
			n.Status = StatusOffline
		}
		if err := st.UpsertNode(ctx, n); err != nil {
			return fmt.Errorf("mark node %s stale: %w", n.PeerID, err)
		}
		if _, err := st.SetHostStatus(ctx, n.PeerID, StatusStale, n.LastHeartbeat); err != nil { // offline comes with expiry
			return fmt.Errorf("mark listings of %s stale: %w", n.PeerID, err)
		}
	}
	if _, err := st.ExpireListings(ctx, now); err != nil {
		return fmt.Errorf("expire listings: %w", err)
	}
	return nil
}
