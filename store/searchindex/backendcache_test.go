package searchindex_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/store/postgres/pgtest"
	"github.com/agentsite/agentsite/store/searchindex"
	"github.com/agentsite/agentsite/store/sqlite/sqlitetest"
)

// countedBackends is an engine's backends counting the reads that reach it.
type countedBackends struct {
	store.Backends
	gets atomic.Int64
}

func (c *countedBackends) GetBackend(ctx context.Context, id string) (agent.Backend, error) {
	c.gets.Add(1)
	return c.Backends.GetBackend(ctx, id)
}

// TestBackendCache: the runtime reads a local agent's backend from
// memory at every turn after the first (the read cache's Backends), and
// reads it again once it changed or was deleted: through the cache, in a
// batch (the registry's bulk path), and on the database with its listing
// (another process), which the change feed shows. An agent without a
// backend is asked of the engine each time, not remembered.
func TestBackendCache(t *testing.T) {
	for name, open := range map[string]func(t *testing.T) searchindex.Engine{
		"sqlite":   func(t *testing.T) searchindex.Engine { return sqlitetest.Open(t) },
		"postgres": func(t *testing.T) searchindex.Engine { return pgtest.Open(t) },
	} {
		t.Run(name, func(t *testing.T) {
			e := open(t)
			idx := indexed(t, e)
			idx.PollEvery = time.Hour
			c := store.NewCache(idx, time.Hour, 100)
			counted := &countedBackends{Backends: e}
			b := c.Backends(counted)
			const id = "id-alpha"
			model := func(what string) string {
				t.Helper()
				be, err := b.GetBackend(t.Context(), id)
				if err != nil {
					t.Fatalf("%s: GetBackend: %v", what, err)
				}
				return be.Model
			}
			wantGets := func(what string, n int64) {
				t.Helper()
				if got := counted.gets.Load(); got != n {
					t.Fatalf("%s: %d reads reached the engine, want %d", what, got, n)
				}
			}
			put := func(w store.Backends, m string) {
				t.Helper()
				if err := w.PutBackend(t.Context(), id, agent.Backend{Kind: agent.BackendLLM, URL: "https://llm.example.org/v1", Model: m}); err != nil {
					t.Fatalf("PutBackend: %v", err)
				}
			}

			upsert(t, c, listing("alpha", "first", 1))
			put(b, "m1")
			for range 4 {
				if got := model("read"); got != "m1" {
					t.Fatalf("read %q, want m1", got)
				}
			}
			wantGets("unchanged backend read 4 times", 1)

			put(b, "m2")
			if got := model("after an update"); got != "m2" {
				t.Fatalf("after an update through the cache: %q, want m2", got)
			}
			wantGets("after an update", 2)

			if err := b.DeleteBackend(t.Context(), id); err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if _, err := b.GetBackend(t.Context(), id); !errors.Is(err, store.ErrNotFound) {
					t.Fatalf("after a delete: %v, want ErrNotFound", err)
				}
			}
			wantGets("an absent backend read twice", 4)

			put(b, "m3")
			model("cached again")
			batcher, ok := c.Batcher()
			if !ok {
				t.Fatal("the cache over the index has no Batcher")
			}
			err := batcher.InBatch(t.Context(), func(ctx context.Context, tx store.Tx) error {
				return tx.PutBackend(ctx, id, agent.Backend{Kind: agent.BackendLLM, URL: "https://llm.example.org/v1", Model: "m4"})
			})
			if err != nil {
				t.Fatalf("InBatch: %v", err)
			}
			if got := model("after a batch"); got != "m4" {
				t.Fatalf("after a batch wrote it: %q, want m4", got)
			}

			// Another process registers the agent again: its backend and
			// listing on the database, the listing seen by the feed.
			put(e, "m5")
			upsert(t, e, listing("alpha", "second", 2))
			if err := idx.CatchUp(); err != nil {
				t.Fatal(err)
			}
			if got := model("after an update behind the cache"); got != "m5" {
				t.Fatalf("after an update on the database: %q, want m5", got)
			}
			if n := c.BackendsLen(); n != 1 {
				t.Fatalf("the cache holds %d backends, want 1", n)
			}
		})
	}
}

// BenchmarkBackendRead: what a turn's read of its agent's backend costs
// from SQLite and from the read cache (BENCHMARKS.md, "The host's
// backend from memory").
func BenchmarkBackendRead(b *testing.B) {
	e := sqlitetest.Open(b)
	idx := indexed(b, e)
	c := store.NewCache(idx, time.Hour, 100)
	const id = "id-alpha"
	upsert(b, c, listing("alpha", "first", 1))
	if err := e.PutBackend(b.Context(), id, agent.Backend{Kind: agent.BackendBuiltin, Builtin: "echo"}); err != nil {
		b.Fatal(err)
	}
	for name, be := range map[string]store.Backends{"sqlite": e, "cached": c.Backends(e)} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, err := be.GetBackend(b.Context(), id); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
