package registry_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/registry"
	"github.com/agentsite/agentsite/agent/registry/registrytest"
	"github.com/agentsite/agentsite/p2p"
	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/store/sqlite/sqlitetest"
)

// TestBatch registers a batch with creations, an update, a refusal of
// every kind and a parse error; each item ends as a form registration of
// it would, with the seq rule, and one bad item refuses only itself.
func TestBatch(t *testing.T) {
	registrytest.Engines(t, func(t *testing.T, st store.Store) {
		env := registrytest.New(t, st)
		ctx := t.Context()
		existing := mustCreate(t, env, registry.Operator, registrytest.Input("existing"))
		bobs := mustCreate(t, env, bob, registrytest.Input("bobs-agent"))

		upd := registrytest.Input("existing")
		upd.Description = "Updated by the batch."
		bad := registrytest.Input("bad-one")
		bad.Backend = agent.Backend{Kind: "nope"}
		items := []registry.BatchItem{
			{Index: 0, Input: registrytest.Input("new-one")},
			{Index: 1, Input: upd},
			{Index: 2, Input: bad},
			{Index: 3, Err: errors.New("line 4: not JSON")},
			{Index: 4, Input: registrytest.Input("bobs-agent")},
			{Index: 5, Input: registrytest.Input("new-two")},
		}
		var got []registry.BatchResult
		err := env.Registry.Batch(ctx, alice, slices.Values(items), 4, func(r registry.BatchResult) { got = append(got, r) })
		if err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(got, func(a, b registry.BatchResult) int { return a.Index - b.Index })
		want := []string{registry.OutcomeCreated, registry.OutcomeRefused, registry.OutcomeRefused,
			registry.OutcomeRefused, registry.OutcomeRefused, registry.OutcomeCreated}
		if len(got) != len(items) {
			t.Fatalf("%d results, want %d: %+v", len(got), len(items), got)
		}
		for i, r := range got {
			if r.Outcome != want[i] {
				t.Errorf("item %d: outcome %s (%v), want %s", i, r.Outcome, r.Err, want[i])
			}
		}
		// alice may not update the operator's agent; the operator may.
		wantField(t, got[1].Err, "name", "already registered")
		wantField(t, got[2].Err, "backend.kind", "")
		wantField(t, got[4].Err, "name", "already registered")
		if got[3].Err == nil || got[3].Err.Error() != "line 4: not JSON" {
			t.Errorf("parse error = %v", got[3].Err)
		}
		l := mustGet(t, st, got[0].ID)
		if l.Record.Owner != "alice" || !l.Local || l.Record.Name != "new-one" {
			t.Errorf("created listing = %+v", l)
		}
		if b, err := st.GetBackend(ctx, got[0].ID); err != nil || b.Builtin != "echo" {
			t.Errorf("backend = %+v, %v", b, err)
		}
		if mustGet(t, st, bobs.Record.ID).Record.Seq != bobs.Record.Seq {
			t.Error("bob's agent changed")
		}

		var res []registry.BatchResult
		if err := env.Registry.Batch(ctx, registry.Operator, slices.Values([]registry.BatchItem{{Input: upd}}), 1,
			func(r registry.BatchResult) { res = append(res, r) }); err != nil {
			t.Fatal(err)
		}
		if res[0].Outcome != registry.OutcomeUpdated {
			t.Fatalf("operator update: %+v", res[0])
		}
		after := mustGet(t, st, existing.Record.ID)
		wantSeqAfter(t, after.Record.Seq, existing.Record.Seq, env.Clock.Now())
		if after.Record.Description != "Updated by the batch." {
			t.Errorf("description = %q", after.Record.Description)
		}
	})
}

// TestBatchSameNameInOrder: items of one name go through one worker in
// order, so the last one wins and every seq is above the previous.
func TestBatchSameNameInOrder(t *testing.T) {
	registrytest.Engines(t, func(t *testing.T, st store.Store) {
		env := registrytest.New(t, st)
		var items []registry.BatchItem
		for i := range 20 {
			in := registrytest.Input("same")
			in.Description = "version " + string(rune('a'+i))
			items = append(items, registry.BatchItem{Index: i, Input: in})
		}
		var n [3]int
		err := env.Registry.Batch(t.Context(), registry.Operator, slices.Values(items), 8, func(r registry.BatchResult) {
			switch r.Outcome {
			case registry.OutcomeCreated:
				n[0]++
			case registry.OutcomeUpdated:
				n[1]++
			default:
				n[2]++
				t.Errorf("refused: %v", r.Err)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		if n != [3]int{1, 19, 0} {
			t.Fatalf("created/updated/refused = %v, want 1/19/0", n)
		}
		id, _ := env.Publisher.AgentID("same")
		if got := mustGet(t, st, id).Record.Description; got != "version t" {
			t.Fatalf("last description = %q, want the last item's", got)
		}
	})
}

// failingStore fails PutBackend for one agent id, in its batches' Tx as
// outside them, and counts the batch transactions of each kind.
type failingStore struct {
	store.Store
	failID      string
	whole, save int
}

var errDiskOnFire = errors.New("disk on fire")

func (f *failingStore) PutBackend(ctx context.Context, id string, b agent.Backend) error {
	if id == f.failID {
		return errDiskOnFire
	}
	return f.Store.PutBackend(ctx, id, b)
}

func (f *failingStore) InBatch(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	f.save++
	return f.Store.(store.Batcher).InBatch(ctx, func(ctx context.Context, tx store.Tx) error {
		return fn(ctx, failingTx{Tx: tx, failID: f.failID})
	})
}

func (f *failingStore) InBatchWhole(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	f.whole++
	return f.Store.(store.Batcher).InBatchWhole(ctx, func(ctx context.Context, tx store.Tx) error {
		return fn(ctx, failingTx{Tx: tx, failID: f.failID})
	})
}

// failingTx is a batch's Tx whose PutBackend fails for failID.
type failingTx struct {
	store.Tx
	failID string
}

func (t failingTx) PutBackend(ctx context.Context, id string, b agent.Backend) error {
	if id == t.failID {
		return errDiskOnFire
	}
	return t.Tx.PutBackend(ctx, id, b)
}

// TestBatchWholeThenSavepoints: a chunk runs first without a savepoint
// per call; a store failure in it rolls the chunk back and runs it again
// with savepoints, so only the failing item is refused and the others
// are created once, with the seq rule.
func TestBatchWholeThenSavepoints(t *testing.T) {
	registrytest.Engines(t, func(t *testing.T, st store.Store) {
		fs := &failingStore{Store: st}
		env := registrytest.New(t, fs)
		ctx := t.Context()
		names := []string{"w-one", "w-two", "w-fails", "w-three", "w-one"}
		items := make([]registry.BatchItem, len(names))
		for i, n := range names {
			items[i] = registry.BatchItem{Index: i, Input: registrytest.Input(n)}
		}
		ok := func(want []string) {
			t.Helper()
			var got []registry.BatchResult
			if err := env.Registry.Batch(ctx, registry.Operator, slices.Values(items), 1, func(r registry.BatchResult) { got = append(got, r) }); err != nil {
				t.Fatal(err)
			}
			slices.SortFunc(got, func(a, b registry.BatchResult) int { return a.Index - b.Index })
			if len(got) != len(want) {
				t.Fatalf("%d results, want %d", len(got), len(want))
			}
			for i, r := range got {
				if r.Outcome != want[i] {
					t.Errorf("item %d (%s): %s (%v), want %s", i, r.Name, r.Outcome, r.Err, want[i])
				}
			}
		}
		ok([]string{registry.OutcomeCreated, registry.OutcomeCreated, registry.OutcomeCreated, registry.OutcomeCreated, registry.OutcomeUpdated})
		// The items may come in one chunk or several (the worker takes
		// what is queued); none needs savepoints.
		if fs.whole < 1 || fs.save != 0 {
			t.Errorf("clean batch: %d whole and %d savepoint transactions, want some and 0", fs.whole, fs.save)
		}
		wholeBefore := fs.whole
		id, err := env.Publisher.AgentID("w-fails")
		if err != nil {
			t.Fatal(err)
		}
		fs.failID = id
		before := mustGet(t, st, id)
		ok([]string{registry.OutcomeUpdated, registry.OutcomeUpdated, registry.OutcomeRefused, registry.OutcomeUpdated, registry.OutcomeUpdated})
		if fs.whole <= wholeBefore || fs.save != 1 {
			t.Errorf("failing batch: %d more whole and %d savepoint transactions, want some and 1 (the failing chunk's redo)", fs.whole-wholeBefore, fs.save)
		}
		if mustGet(t, st, id).Record.Seq != before.Record.Seq {
			t.Error("the refused item's agent changed")
		}
	})
}

// TestBatchSkipsOwnVerification: a batch seals through SealFresh (no
// verification of the signature just made), a form through Publish.
func TestBatchSkipsOwnVerification(t *testing.T) {
	st := sqlitetest.Open(t)
	env := registrytest.New(t, st)
	cp := &countingPublisher{Publisher: env.Publisher}
	env.Registry.Publisher = cp
	ctx := t.Context()
	if err := env.Registry.Batch(ctx, registry.Operator, slices.Values([]registry.BatchItem{{Input: registrytest.Input("fresh-one")}}), 1, func(registry.BatchResult) {}); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, env, registry.Operator, registrytest.Input("form-one"))
	if cp.fresh != 1 || cp.verified != 1 {
		t.Errorf("SealFresh %d, Publish %d; want 1 and 1", cp.fresh, cp.verified)
	}
	id, _ := env.Publisher.AgentID("fresh-one")
	if l := mustGet(t, st, id); l.Record.Name != "fresh-one" {
		t.Errorf("listing = %+v", l.Record)
	}
}

type countingPublisher struct {
	*p2p.Publisher
	mu              sync.Mutex
	fresh, verified int
}

func (c *countingPublisher) Publish(ctx context.Context, rec *agent.Record) error {
	c.verified++
	return c.Publisher.Publish(ctx, rec)
}

func (c *countingPublisher) SealFresh(rec *agent.Record) ([]byte, *agent.Record, error) {
	c.mu.Lock()
	c.fresh++
	c.mu.Unlock()
	return c.Publisher.SealFresh(rec)
}

// TestBatchAnnouncesAfterCommit: a chunk's records go to the network only
// once its transaction committed (a chunk rolled back and redone must not
// have announced records it then refuses).
func TestBatchAnnouncesAfterCommit(t *testing.T) {
	st := sqlitetest.Open(t)
	env := registrytest.New(t, st)
	ap := &announcingPublisher{Publisher: env.Publisher, st: st, t: t}
	env.Registry.Publisher = ap
	items := []registry.BatchItem{{Index: 0, Input: registrytest.Input("ann-one")}, {Index: 1, Input: registrytest.Input("ann-two")}}
	if err := env.Registry.Batch(t.Context(), registry.Operator, slices.Values(items), 1, func(registry.BatchResult) {}); err != nil {
		t.Fatal(err)
	}
	if ap.announced != 2 {
		t.Errorf("%d records announced, want 2", ap.announced)
	}
}

type announcingPublisher struct {
	*p2p.Publisher
	st        store.Store
	t         *testing.T
	announced int
}

// Announce checks the record is committed: SQLite's readers see only
// committed writes.
func (a *announcingPublisher) Announce(ctx context.Context, rec *agent.Record, env []byte) error {
	a.announced++
	if _, err := a.st.GetAgent(ctx, rec.ID); err != nil {
		a.t.Errorf("announced %s before its transaction committed: %v", rec.Name, err)
	}
	return a.Publisher.Announce(ctx, rec, env)
}

// pageStore counts, in its batches' transactions, the listings written
// one statement each (UpsertRecord) and at once (store.PageWriter).
type pageStore struct {
	store.Store
	mu                 sync.Mutex
	whole, single      int
	pages, pageRecords int
}

func (p *pageStore) InBatch(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	return p.Store.(store.Batcher).InBatch(ctx, func(ctx context.Context, tx store.Tx) error {
		return fn(ctx, pageTx{Tx: tx, p: p})
	})
}

func (p *pageStore) InBatchWhole(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	p.mu.Lock()
	p.whole++
	p.mu.Unlock()
	return p.Store.(store.Batcher).InBatchWhole(ctx, func(ctx context.Context, tx store.Tx) error {
		return fn(ctx, pageTx{Tx: tx, p: p})
	})
}

type pageTx struct {
	store.Tx
	p *pageStore
}

func (t pageTx) UpsertRecord(ctx context.Context, l store.Listing) error {
	t.p.mu.Lock()
	t.p.single++
	t.p.mu.Unlock()
	return t.Tx.UpsertRecord(ctx, l)
}

func (t pageTx) UpsertRecords(ctx context.Context, ls []store.Listing) ([]bool, error) {
	t.p.mu.Lock()
	t.p.pages++
	t.p.pageRecords += len(ls)
	t.p.mu.Unlock()
	return t.Tx.(store.PageWriter).UpsertRecords(ctx, ls)
}

// TestBatchWritesAChunkAtOnce: on a store that writes many listings at
// once (SQLite's store.PageWriter), a chunk's listings go in one call, not
// one statement each (each flushed SQLite's full-text index: an import of
// 1M agents); every item is created and readable, and a second run
// updates each.
func TestBatchWritesAChunkAtOnce(t *testing.T) {
	st := sqlitetest.Open(t)
	ps := &pageStore{Store: st}
	env := registrytest.New(t, ps)
	ctx := t.Context()
	const n = 40
	items := make([]registry.BatchItem, n)
	for i := range items {
		items[i] = registry.BatchItem{Index: i, Input: registrytest.Input(fmt.Sprintf("paged-%02d", i))}
	}
	for round, want := range []string{registry.OutcomeCreated, registry.OutcomeUpdated} {
		ps.whole, ps.single, ps.pages, ps.pageRecords = 0, 0, 0, 0
		var got []registry.BatchResult
		if err := env.Registry.Batch(ctx, registry.Operator, slices.Values(items), 1, func(r registry.BatchResult) { got = append(got, r) }); err != nil {
			t.Fatal(err)
		}
		for _, r := range got {
			if r.Outcome != want {
				t.Fatalf("round %d: item %d: %s (%v), want %s", round, r.Index, r.Outcome, r.Err, want)
			}
			if l := mustGet(t, st, r.ID); l.Record.Name != r.Name || !l.Local {
				t.Errorf("round %d: %s stored as %+v", round, r.Name, l.Record)
			}
		}
		// A worker takes what is queued when it starts a chunk, so on a
		// loaded machine the first chunk may hold a single item (written
		// alone, as one listing is); every chunk of more is one page.
		if ps.pageRecords+ps.single != n || ps.single != ps.whole-ps.pages {
			t.Errorf("round %d: %d listings one by one, %d in %d pages over %d transactions; want every transaction of more than one listing to write them in one page (%d in all)",
				round, ps.single, ps.pageRecords, ps.pages, ps.whole, n)
		}
	}
}
