package searchindex_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/store/postgres/pgtest"
	"github.com/agentsite/agentsite/store/searchindex"
	"github.com/agentsite/agentsite/store/sqlite/sqlitetest"
)

// countedGets is the index counting the GetAgent calls that reach it.
type countedGets struct {
	*searchindex.Store
	gets atomic.Int64
}

func (c *countedGets) GetAgent(ctx context.Context, id string) (store.Listing, error) {
	c.gets.Add(1)
	return c.Store.GetAgent(ctx, id)
}

// TestAgentCache: the read cache serves an agent it read from memory (a
// chat turn reads its agent on each node every turn), and reads it again
// after it changed or was deleted: through the cache (this process), and
// behind its back on the database (another process), which the change
// feed the index follows shows.
func TestAgentCache(t *testing.T) {
	for name, open := range map[string]func(t *testing.T) searchindex.Engine{
		"sqlite":   func(t *testing.T) searchindex.Engine { return sqlitetest.Open(t) },
		"postgres": func(t *testing.T) searchindex.Engine { return pgtest.Open(t) },
	} {
		t.Run(name, func(t *testing.T) {
			e := open(t)
			idx := indexed(t, e)
			idx.PollEvery = time.Hour
			counted := &countedGets{Store: idx}
			c := store.NewCache(counted, time.Hour, 100)
			get := func(what string) store.Listing {
				t.Helper()
				l, err := c.GetAgent(t.Context(), "id-alpha")
				if err != nil {
					t.Fatalf("%s: GetAgent: %v", what, err)
				}
				return l
			}
			wantGets := func(what string, n int64) {
				t.Helper()
				if got := counted.gets.Load(); got != n {
					t.Fatalf("%s: %d reads reached the engine, want %d", what, got, n)
				}
			}

			upsert(t, c, listing("alpha", "first", 1))
			get("first read")
			for range 3 {
				get("read again")
			}
			wantGets("unchanged agent read 4 times", 1)

			upsert(t, c, listing("alpha", "second", 2))
			if l := get("after an update"); l.Record.Description != "second" {
				t.Fatalf("after an update through the cache: %q, want second", l.Record.Description)
			}
			wantGets("after an update", 2)

			// Another process: the engine directly, seen by the feed.
			upsert(t, e, listing("alpha", "third", 3))
			if err := idx.CatchUp(); err != nil {
				t.Fatal(err)
			}
			if l := get("after an update behind the cache"); l.Record.Description != "third" {
				t.Fatalf("after an update on the database: %q, want third", l.Record.Description)
			}

			gone := listing("alpha", "third", 4)
			gone.Record.Tombstone = true
			upsert(t, c, gone)
			if l := get("after a delete"); !l.Record.Tombstone {
				t.Fatal("after a delete through the cache: still served as live")
			}

			back := listing("alpha", "fifth", 5)
			upsert(t, e, back)
			if err := idx.CatchUp(); err != nil {
				t.Fatal(err)
			}
			get("after it came back behind the cache")
			gone = listing("alpha", "fifth", 6)
			gone.Record.Tombstone = true
			upsert(t, e, gone)
			if err := idx.CatchUp(); err != nil {
				t.Fatal(err)
			}
			if l := get("after a delete behind the cache"); !l.Record.Tombstone {
				t.Fatal("after a delete on the database: still served as live")
			}
		})
	}
}
