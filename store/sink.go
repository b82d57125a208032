package store

import (
	"context"
	"time"

	"github.com/agentsite/agentsite/agent"
)

// Sink turns a verified record into a listing: it is how every listing,
// local or from the network, enters the cache (DESIGN.md: "one code path for
// a listing became known"). It satisfies p2p's Sink interface.
type Sink struct {
	Store  Store
	SelfID string           // this node's peer ID: records hosted by it are Local
	Now    func() time.Time // nil: time.Now
}

// Put upserts rec (already verified by the caller) with its envelope. It
// returns ErrStale when the store already has this or a newer seq.
func (s *Sink) Put(ctx context.Context, rec *agent.Record, envelope []byte) error {
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	host := rec.HostPeerID()
	t := now().UTC()
	status := StatusOnline
	if !rec.ExpiresAt.After(t) {
		status = StatusOffline
	}
	return s.Store.UpsertRecord(ctx, Listing{
		Record:     *rec,
		Envelope:   envelope,
		Status:     status,
		LastSeen:   t,
		HostPeerID: host,
		Local:      host == s.SelfID,
		UpdatedAt:  t,
	})
}
