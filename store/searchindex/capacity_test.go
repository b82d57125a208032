package searchindex_test

import (
	"slices"
	"testing"
	"time"

	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/store/postgres/pgtest"
	"github.com/agentsite/agentsite/store/searchindex"
	"github.com/agentsite/agentsite/store/sqlite/sqlitetest"
)

// TestEvictedLeavesTheIndex: a listing deleted by an eviction behind the
// index's back (another process on the database, or the engine directly)
// leaves the index: the change feed numbers the deletion as a tombstone
// (migration 0010), and the index, not the engine, answers the search
// without it; the row cache does not serve it either. Through the Store,
// the eviction is a write the next search catches up on at once.
func TestEvictedLeavesTheIndex(t *testing.T) {
	for name, open := range map[string]func(t *testing.T) searchindex.Engine{
		"sqlite":   func(t *testing.T) searchindex.Engine { return sqlitetest.Open(t) },
		"postgres": func(t *testing.T) searchindex.Engine { return pgtest.Open(t) },
	} {
		t.Run(name, func(t *testing.T) {
			e := open(t)
			s := indexed(t, e)
			s.PollEvery = time.Hour // only this process's writes make it catch up
			s.RowTTL = 0            // else the row cache serves alpha as read for its TTL, as for any write of another process
			gone := listing("alpha", "first of all", 1)
			gone.Status = store.StatusStale // of a host never heard: the first to go (stale ones are listed last)
			next := listing("gamma", "first to go next", 1)
			next.Status = store.StatusStale
			upsert(t, s, gone, listing("beta", "first again", 1), next)
			if got := search(t, s, "first"); !slices.Equal(got, []string{"beta", "gamma", "alpha"}) {
				t.Fatalf("before: %v", got)
			}
			ev, ok := e.(store.Evictor)
			if !ok {
				t.Fatalf("%T is no store.Evictor", e)
			}
			if n, err := ev.EvictListings(t.Context(), 1); err != nil || n != 1 {
				t.Fatalf("EvictListings(1) = %d, %v", n, err)
			}
			if got := search(t, s, "first"); !slices.Equal(got, []string{"beta", "gamma"}) {
				t.Fatalf("after alpha was evicted behind the index: %v, want [beta gamma]", got)
			}
			if n, _, _ := s.Counts(); n != 2 {
				t.Errorf("the index holds %d listings, want 2", n)
			}
			// Through the Store: the next search catches up first, and
			// the row cache, however long it may serve a row, drops gamma.
			s.RowTTL = time.Hour
			if got := search(t, s, "first"); !slices.Equal(got, []string{"beta", "gamma"}) {
				t.Fatalf("again: %v, want [beta gamma]", got)
			}
			if n, err := s.EvictListings(t.Context(), 1); err != nil || n != 1 {
				t.Fatalf("Store.EvictListings(1) = %d, %v", n, err)
			}
			if got := search(t, s, "first"); !slices.Equal(got, []string{"beta"}) {
				t.Fatalf("after gamma was evicted through the index: %v, want [beta]", got)
			}
			if _, answered, passed := s.Counts(); passed != 0 || answered != 4 {
				t.Errorf("answered %d, passed %d; want the index to answer all 4", answered, passed)
			}
			// A new index loaded on the database holds the rest only.
			if n, _, _ := indexed(t, e).Counts(); n != 1 {
				t.Errorf("a fresh index holds %d listings, want 1", n)
			}
		})
	}
}
