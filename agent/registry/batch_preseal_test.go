package registry_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/registry"
	"github.com/agentsite/agentsite/agent/registry/registrytest"
	"github.com/agentsite/agentsite/p2p"
	"github.com/agentsite/agentsite/store"
)

// sealWatch notes whether a batch transaction is open (InBatchWhole's fn
// runs) and runs before, once, at the start of the first one: a change
// another writer makes after a chunk was presealed.
type sealWatch struct {
	store.Store
	inTx   atomic.Bool
	once   sync.Once
	before func(ctx context.Context)
}

// GetAgents passes the engine's read of many listings through, as the
// offline import's store (the engine) has it.
func (s *sealWatch) GetAgents(ctx context.Context, ids []string) ([]store.Listing, error) {
	return s.Store.(store.AgentsGetter).GetAgents(ctx, ids)
}

func (s *sealWatch) InBatch(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	return s.Store.(store.Batcher).InBatch(ctx, func(ctx context.Context, tx store.Tx) error {
		s.inTx.Store(true)
		defer s.inTx.Store(false)
		return fn(ctx, tx)
	})
}

func (s *sealWatch) InBatchWhole(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	if s.before != nil {
		s.once.Do(func() { s.before(ctx) })
	}
	return s.Store.(store.Batcher).InBatchWhole(ctx, func(ctx context.Context, tx store.Tx) error {
		s.inTx.Store(true)
		defer s.inTx.Store(false)
		return fn(ctx, tx)
	})
}

// sealCounter counts the records sealed, and those sealed while a batch
// transaction was open.
type sealCounter struct {
	*p2p.Publisher
	watch        *sealWatch
	sealed, inTx atomic.Int64
}

func (c *sealCounter) SealFresh(rec *agent.Record) ([]byte, *agent.Record, error) {
	c.sealed.Add(1)
	if c.watch.inTx.Load() {
		c.inTx.Add(1)
	}
	return c.Publisher.SealFresh(rec)
}

// TestBatchSealsBeforeItsTransaction: a chunk's records are signed before
// its transaction begins (the store's one writer does not wait on
// signing), and what is stored is what a batch signed inside would store.
func TestBatchSealsBeforeItsTransaction(t *testing.T) {
	registrytest.Engines(t, func(t *testing.T, st store.Store) {
		w := &sealWatch{Store: st}
		env := registrytest.New(t, w)
		sc := &sealCounter{Publisher: env.Publisher, watch: w}
		env.Registry.Publisher = sc
		ctx := t.Context()
		names := []string{"pre-a", "pre-b", "pre-c", "pre-a", "pre-d"}
		items := make([]registry.BatchItem, len(names))
		for i, n := range names {
			items[i] = registry.BatchItem{Index: i, Input: registrytest.Input(n)}
		}
		var got []registry.BatchResult
		if err := env.Registry.Batch(ctx, registry.Operator, slices.Values(items), 1, func(r registry.BatchResult) { got = append(got, r) }); err != nil {
			t.Fatal(err)
		}
		for _, r := range got {
			if r.Outcome == registry.OutcomeRefused {
				t.Errorf("item %d (%s) refused: %v", r.Index, r.Name, r.Err)
			}
		}
		if n := sc.inTx.Load(); n != 0 {
			t.Errorf("%d of %d records sealed inside the transaction, want 0", n, sc.sealed.Load())
		}
		for _, n := range []string{"pre-a", "pre-b", "pre-c", "pre-d"} {
			id, _ := env.Publisher.AgentID(n)
			l := mustGet(t, st, id)
			opened, err := agent.Open(l.Envelope, l.Record.IssuedAt)
			if err != nil {
				t.Fatalf("%s: stored envelope does not open: %v", n, err)
			}
			if opened.Seq != l.Record.Seq || opened.Name != n {
				t.Errorf("%s: envelope seq %d name %q, row seq %d", n, opened.Seq, opened.Name, l.Record.Seq)
			}
		}
	})
}

// TestBatchResealsWhatChangedMeanwhile: an agent another writer updated
// between a chunk's presealing and its transaction is decided and sealed
// again inside it, after that update (a presealed record would follow a
// seq that is no longer the agent's).
func TestBatchResealsWhatChangedMeanwhile(t *testing.T) {
	registrytest.Engines(t, func(t *testing.T, st store.Store) {
		w := &sealWatch{Store: st}
		env := registrytest.New(t, w)
		ctx := t.Context()
		mustCreate(t, env, registry.Operator, registrytest.Input("moved"))
		id, _ := env.Publisher.AgentID("moved")
		var between uint64
		w.before = func(ctx context.Context) {
			in := registrytest.Input("moved")
			in.Description = "Changed by a form while the batch was signing."
			l, err := env.Registry.Update(ctx, registry.Operator, id, in)
			if err != nil {
				t.Errorf("update meanwhile: %v", err)
				return
			}
			between = l.Record.Seq
		}
		sc := &sealCounter{Publisher: env.Publisher, watch: w}
		env.Registry.Publisher = sc
		items := []registry.BatchItem{{Index: 0, Input: registrytest.Input("moved")}, {Index: 1, Input: registrytest.Input("still")}}
		if err := env.Registry.Batch(ctx, registry.Operator, slices.Values(items), 1, func(r registry.BatchResult) {
			if r.Outcome == registry.OutcomeRefused {
				t.Errorf("item %d (%s) refused: %v", r.Index, r.Name, r.Err)
			}
		}); err != nil {
			t.Fatal(err)
		}
		l := mustGet(t, st, id)
		if l.Record.Seq <= between || l.Record.Description == "Changed by a form while the batch was signing." {
			t.Errorf("stored seq %d (%q), want the batch's record after the update's seq %d", l.Record.Seq, l.Record.Description, between)
		}
		if n := sc.inTx.Load(); n != 1 {
			t.Errorf("%d records sealed inside the transaction, want 1 (the agent changed meanwhile)", n)
		}
	})
}
