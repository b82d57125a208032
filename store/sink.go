package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/agentsite/agentsite/agent"
)

// Sink connects the network side to the store: it turns verified records
// into listings (how every listing, local or from the network, enters the
// cache: docs/architecture.md's "one code path for a listing became known"), serves the
// catalogue to syncing peers, and records heartbeats. It satisfies p2p.Cache.
//
// The planet is open (docs/architecture.md "Peers are adversaries"): a peer can relay
// valid records signed by any number of fresh identities that never send
// a heartbeat. So a host gets a row in the nodes table only from a verified
// heartbeat (NodeSeen), a listing whose host this node has not heard enters
// stale (Sweep takes it offline after its UnheardAfter), and a publisher
// holds at most its quota of listings that are not offline: MaxPerPublisher
// while this node does not hear it, more as it is heard (sink_quota.go).
type Sink struct {
	// Store is where listings and nodes go: in a node, the read cache, so
	// that every write through the Sink invalidates it.
	Store  Network
	SelfID string           // this node's peer ID: records hosted by it are Local
	Now    func() time.Time // nil: time.Now
	// MaxPerPublisher bounds the listings a publisher other than this node
	// may hold here that are not offline while this node does not hear it:
	// a new id beyond it is refused with agent.ErrOverQuota (updates of a
	// listing held are not). A publisher it hears earns more (sink_quota.go).
	// 0 means DefaultMaxPerPublisher.
	MaxPerPublisher int
	// QuotaDoubling is how long a heard publisher's quota takes to double
	// (sink_quota.go); 0 means DefaultQuotaDoubling.
	QuotaDoubling time.Duration
	// Logger, if set, names each publisher refused over its quota, at
	// most once a minute.
	Logger *slog.Logger
	// Verified, if set, reports whether this node proved a domain of the
	// publisher (agent/verify): evidence that counts as a day heard
	// (sink_quota.go).
	Verified func(publisher string) bool
	// Capacity, if set, makes room for a new listing from the network
	// (--max-listings), or refuses it (capacity.go).
	Capacity *Capacity

	heard   heardTable // the nodes heard, in memory (NodeSeen, Sweep)
	quota   quotaMemo  // publishers' counts as the last pages left them (PutAll)
	refused refusals   // what was refused over quotas, by publisher
}

// DefaultMaxPerPublisher is Sink.MaxPerPublisher when unset: far above what
// one node hosts (an import of 100k agents is this node's own, and local
// records are not counted), far below the 21,106 identities' worth of
// records one rogue peer delivered to a node before these quotas.
const DefaultMaxPerPublisher = 10_000

// DefaultUnheardAfter is how long a listing whose host never sent a
// heartbeat stays (stale) before Sweep takes it offline, when the caller
// gives no threshold: a host that is alive heartbeats every 10 s, and a
// record heard before its host's first heartbeat has minutes to be joined
// by one.
const DefaultUnheardAfter = 15 * time.Minute

func (s *Sink) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

func (s *Sink) maxPerPublisher() int {
	if s.MaxPerPublisher > 0 {
		return s.MaxPerPublisher
	}
	return DefaultMaxPerPublisher
}

// Put upserts rec (already verified by the caller) with its envelope.
// changed is false when the store already has this or a newer seq. A
// listing of a host whose heartbeat this node has not seen (no node row,
// or one that is not online) enters stale; its host's next heartbeat turns
// it online (NodeSeen). A new id from a publisher over its quota is
// refused with an error wrapping agent.ErrOverQuota, and nothing is
// stored.
func (s *Sink) Put(ctx context.Context, rec *agent.Record, envelope []byte) (changed bool, err error) {
	host := rec.HostPeerID()
	t := s.now()
	if host == s.SelfID && rec.Publisher == s.SelfID { // only what we signed is ours to host
		return PutOwn(ctx, s.Store, rec, envelope, t)
	}
	nodes, err := s.nodesOf(ctx, host, rec.Publisher)
	if err != nil {
		return false, err
	}
	status := StatusOnline
	if !rec.ExpiresAt.After(t) {
		status = StatusOffline
	} else if n, ok := nodes[host]; !ok || n.Status != StatusOnline {
		// Its heartbeats do not arrive: it has no node row (only NodeSeen
		// makes one), or Sweep found it silent.
		status = StatusStale
	}
	if rec.Publisher != s.SelfID {
		if err := s.checkQuota(ctx, rec, nodes, t); err != nil {
			return false, err
		}
	}
	if err := s.Capacity.Admit(ctx, rec.ID, s.evidence(rec, nodes, t)); err != nil {
		return false, err
	}
	changed, err = upsert(ctx, s.Store, Listing{
		Record:     *rec,
		Envelope:   envelope,
		Status:     status,
		LastSeen:   t,
		HostPeerID: host,
		Local:      false,
		UpdatedAt:  t,
	})
	if err == nil && changed && status == StatusStale && s.heard.online(host) {
		// The host's heartbeat turned its listings online while this one
		// was stored stale; an unchanged heartbeat writes nothing, so
		// nothing else would (NodeSeen).
		if _, err := s.Store.SetHostStatus(ctx, host, StatusOnline, t); err != nil {
			return changed, fmt.Errorf("mark listings of %s online: %w", host, err)
		}
	}
	return changed, err
}

// ListingWriter is where PutOwn writes: a Network, or a bulk import's Tx.
type ListingWriter interface {
	UpsertRecord(ctx context.Context, l Listing) error
}

// PutOwn is what Put does with a record this node signed and hosts,
// written with w at now: online until it expires (then offline), Local,
// no quota and no host to have heard. A bulk import calls it with its
// transaction (Tx), so that its records enter the store by the Sink's
// rule and in the transaction. changed is false when w already has this
// seq or a newer one.
func PutOwn(ctx context.Context, w ListingWriter, rec *agent.Record, envelope []byte, now time.Time) (changed bool, err error) {
	return upsert(ctx, w, ownListing(rec, envelope, now))
}

// ownListing is the listing of a record this node signed and hosts, at now.
func ownListing(rec *agent.Record, envelope []byte, now time.Time) Listing {
	status := StatusOnline
	if !rec.ExpiresAt.After(now) {
		status = StatusOffline
	}
	return Listing{
		Record:     *rec,
		Envelope:   envelope,
		Status:     status,
		LastSeen:   now,
		HostPeerID: rec.HostPeerID(),
		Local:      true,
		UpdatedAt:  now,
	}
}

// upsert writes l; a stale seq is no change, not an error.
func upsert(ctx context.Context, w ListingWriter, l Listing) (changed bool, err error) {
	err = w.UpsertRecord(ctx, l)
	if errors.Is(err, ErrStale) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, nil
}

// checkQuota refuses a new id from a publisher that already holds its
// quota (quotaOf) of listings that are not offline. An id already stored
// (an update, a tombstone) is never refused, and only a new id pays for
// the count. Two new ids of one publisher racing may both pass at the
// limit: the bound is on what a flood can hold, not exact.
func (s *Sink) checkQuota(ctx context.Context, rec *agent.Record, nodes map[string]Node, now time.Time) error {
	known, err := s.Store.HasAgent(ctx, rec.ID)
	if err != nil {
		return fmt.Errorf("look up agent %s: %w", rec.ID, err)
	}
	if known {
		return nil
	}
	limit := s.quotaOf(rec.Publisher, nodes, now)
	held, err := s.Store.CountPublished(ctx, rec.Publisher, limit)
	if err != nil {
		return fmt.Errorf("count listings of publisher %s: %w", rec.Publisher, err)
	}
	if held >= limit {
		_, heard := heardSince(nodes, rec.Publisher)
		return s.overQuota(rec.Publisher, held, limit, heard, now)
	}
	return nil
}

// Envelopes serves a page of the catalogue for sync.
func (s *Sink) Envelopes(ctx context.Context, after int64, tag string, limit int) ([][]byte, int64, error) {
	return s.Store.CatalogueEnvelopes(ctx, after, tag, limit, s.now())
}

// NodeSeen records a heartbeat: the node row is made or refreshed (the
// only way a node gets one) and its listings are online again. The
// agents_hosted it stores is what the heartbeat claims, capped at the
// listings of that host this node holds: a claim is not shown unchecked.
//
// A heartbeat that says nothing the row does not (the node is online, its
// version, addresses and claim unchanged) writes nothing: when it was
// heard is kept in memory, which Sweep reads and writes to the row
// lazily, one statement for every node. A heartbeat without addresses
// (agentsite/status/2 sends them when they change) keeps the stored ones.
func (s *Sink) NodeSeen(ctx context.Context, hb agent.Heartbeat) error {
	t := s.now()
	if s.heard.fresh(&hb, t) {
		return nil
	}
	n, err := s.nodeRow(ctx, &hb, t)
	if err != nil {
		return err
	}
	if err := s.Store.UpsertNode(ctx, n); err != nil {
		return fmt.Errorf("upsert node: %w", err)
	}
	// Online in memory before the listings are: a Put that stored one of
	// this host's listings stale meanwhile sees it and turns it online
	// (Put), as the next heartbeat no longer does.
	s.heard.wrote(&hb, n, t)
	if _, err := s.Store.SetHostStatus(ctx, hb.PeerID, StatusOnline, t); err != nil {
		s.heard.silenced(hb.PeerID)
		return fmt.Errorf("mark listings online: %w", err)
	}
	return nil
}

// LocalCount counts the agents this node hosts (tombstones excluded) from
// an index: the heartbeat's agents_hosted, without reading a listing.
func (s *Sink) LocalCount(ctx context.Context) (int, error) {
	c, err := s.Store.CountLocal(ctx)
	if err != nil {
		return 0, fmt.Errorf("count local agents: %w", err)
	}
	return c.N, nil
}

// LocalNames is the names of those of ids that this node hosts: what the
// heartbeat needs of its hosted listings, for the agents whose health
// changed, read a page at a time.
func (s *Sink) LocalNames(ctx context.Context, ids []string) (map[string]string, error) {
	out := make(map[string]string, len(ids))
	for len(ids) > 0 {
		page := ids[:min(len(ids), localNamesPage)]
		ids = ids[len(page):]
		names, err := s.Store.LocalNames(ctx, page)
		if err != nil {
			return nil, fmt.Errorf("names of local agents: %w", err)
		}
		for id, name := range names {
			out[id] = name
		}
	}
	return out, nil
}

// localNamesPage is how many ids one LocalNames statement looks up.
const localNamesPage = 1000

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

// Sweep applies the liveness rules (docs/architecture.md): a node whose heartbeats
// stopped for staleAfter (3 heartbeat intervals) and its listings turn
// stale; listings past expires_at turn offline, and so do listings whose
// host never sent a heartbeat once unheardAfter has passed since they were
// last heard of (0 means DefaultUnheardAfter). Local listings are left to
// the node itself (it re-signs them before they expire). A node silent for
// offlineAfter is shown offline in the nodes table. The nodes are read a
// page at a time.
func Sweep(ctx context.Context, st Network, selfID string, now time.Time, staleAfter, offlineAfter, unheardAfter time.Duration) error {
	return sweep(ctx, st, selfID, now, staleAfter, offlineAfter, unheardAfter, nil)
}

// Sweep is store.Sweep on what this Sink heard: it first writes the
// heartbeats heard since the nodes' rows were (one statement for every
// node that lags by a minute or more), then judges each node's silence
// by when the Sink last heard it, against 3 of the intervals the node
// declares if that is longer than staleAfter (a node of a large planet
// heartbeats less often: agentsite/status/2), and offlineAfter likewise.
func (s *Sink) Sweep(ctx context.Context, now time.Time, staleAfter, offlineAfter, unheardAfter time.Duration) error {
	if seen := s.heard.unflushed(now); len(seen) > 0 {
		if err := s.Store.TouchNodes(ctx, seen); err != nil {
			return fmt.Errorf("write when nodes were last heard: %w", err)
		}
	}
	return sweep(ctx, s.Store, s.SelfID, now, staleAfter, offlineAfter, unheardAfter, s.heard.judge)
}

// judge is the node as the Sweep sees it: its last heartbeat is the one
// last heard, its thresholds follow its declared interval. silenced is
// called on nodes the sweep turns stale.
func (h *heardTable) judge(n *Node, staleAfter, offlineAfter *time.Duration) (silenced func()) {
	last, interval, ok := h.lastHeard(n.PeerID)
	if !ok {
		return func() {}
	}
	if last.After(n.LastHeartbeat) {
		n.LastHeartbeat = last
	}
	*staleAfter = max(*staleAfter, 3*interval)
	*offlineAfter = max(*offlineAfter, 3*interval)
	return func() { h.silenced(n.PeerID) }
}

func sweep(ctx context.Context, st Network, selfID string, now time.Time, staleAfter, offlineAfter, unheardAfter time.Duration,
	judge func(n *Node, staleAfter, offlineAfter *time.Duration) (silenced func())) error {
	for q := (NodeQuery{Limit: MaxLimit}); ; {
		page, err := st.ListNodes(ctx, q)
		if err != nil {
			return fmt.Errorf("list nodes: %w", err)
		}
		for _, n := range page.Nodes {
			stale, offline, silenced := staleAfter, offlineAfter, func() {}
			if judge != nil {
				silenced = judge(&n, &stale, &offline)
			}
			changed, err := sweepNode(ctx, st, selfID, now, stale, offline, n)
			if err != nil {
				return err
			}
			if changed {
				silenced()
			}
		}
		if page.Next == "" {
			break
		}
		q.After = page.Next
	}
	if unheardAfter <= 0 {
		unheardAfter = DefaultUnheardAfter
	}
	if _, err := st.ExpireUnheard(ctx, now.Add(-unheardAfter), selfID); err != nil {
		return fmt.Errorf("expire listings of hosts never heard: %w", err)
	}
	// Last, so that a wrapper that learns of writes by the methods it
	// wraps (store/searchindex) reads both changes even if it does not
	// know ExpireUnheard.
	if _, err := st.ExpireListings(ctx, now); err != nil {
		return fmt.Errorf("expire listings: %w", err)
	}
	return nil
}

// sweepNode turns n and its listings stale, or n offline, when its
// heartbeats stopped long enough.
func sweepNode(ctx context.Context, st Network, selfID string, now time.Time, staleAfter, offlineAfter time.Duration, n Node) (changed bool, err error) {
	silent := now.Sub(n.LastHeartbeat)
	if n.PeerID == selfID || n.Status == StatusOffline || silent < staleAfter {
		return false, nil
	}
	if n.Status == StatusStale && silent < offlineAfter {
		return false, nil
	}
	n.Status = StatusStale
	if silent >= offlineAfter {
		n.Status = StatusOffline
	}
	if err := st.UpsertNode(ctx, n); err != nil {
		return false, fmt.Errorf("mark node %s stale: %w", n.PeerID, err)
	}
	if _, err := st.SetHostStatus(ctx, n.PeerID, StatusStale, n.LastHeartbeat); err != nil { // offline comes with expiry
		return false, fmt.Errorf("mark listings of %s stale: %w", n.PeerID, err)
	}
	return true, nil
}

// ExpireBatch is how many listings one statement of ExpireUnheard turns
// offline at most: each such statement ends well within the store
// deadline (--store-timeout) however large the backlog (at 1M never-heard
// listings one statement for all ran past it every sweep and was rolled
// back, so none ever expired).
const ExpireBatch = 1000

// ExpireInBatches runs step, which expires at most ExpireBatch listings
// in a statement of its own, until a step expires fewer or ctx ends; it
// returns how many expired in all (those of the steps that committed,
// also when a later one failed).
func ExpireInBatches(ctx context.Context, step func(ctx context.Context) (int, error)) (int, error) {
	total := 0
	for {
		n, err := step(ctx)
		total += n
		if err != nil {
			return total, err
		}
		if n < ExpireBatch {
			return total, nil
		}
		if err := ctx.Err(); err != nil {
			return total, err
		}
	}
}
