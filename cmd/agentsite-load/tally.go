package main

import (
	"context"
	"sync"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

// Where the Sink's quota counts come from while seeding (--quota-counts).
const (
	quotaFromStore  = "store"  // the store counts each publisher's listings, as on a node
	quotaFromSeeder = "seeder" // the seeder's tally of what it wrote (talliedStore)
)

// talliedStore is the seeding's store with the Sink's quota counts
// (CountPublished) answered from what the seeder wrote, not counted by
// the store. The Sink reads each publisher's count every 10 s
// (store.Sink's quota memo); the seeder's 50 publishers hold 20,000
// listings each at 1M, and on Postgres each count joins a publisher's
// records to their listings: at 200k listings, 83 % of the server's
// busy time was those counts, and the seed's rate fell from ~1,000 to
// ~150 listings/s. A fresh store holds exactly what the seeder wrote
// (every listing new, none offline), so the tally is the count the store
// would give.
type talliedStore struct {
	store.Store
	b store.Batcher

	mu  sync.Mutex
	per map[string]int // listings written (committed) by publisher
}

func newTalliedStore(st store.Store, b store.Batcher) *talliedStore {
	return &talliedStore{Store: st, b: b, per: map[string]int{}}
}

// InBatch implements store.Batcher.
func (s *talliedStore) InBatch(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	return s.b.InBatch(ctx, fn)
}

// InBatchWhole implements store.Batcher.
func (s *talliedStore) InBatchWhole(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	return s.b.InBatchWhole(ctx, fn)
}

// CountPublished implements store.Catalogue from the tally.
func (s *talliedStore) CountPublished(_ context.Context, publisher string, limit int) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return min(s.per[publisher], max(limit, 0)), nil
}

// written adds a page the Sink stored (each record new) to the tally.
func (s *talliedStore) written(recs []*agent.Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range recs {
		s.per[r.Publisher]++
	}
}
