package storetest

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

var batchCases = []testCase{
	{"BatchCommitsTogether", testBatchCommits},
	{"BatchRollsBack", testBatchRollsBack},
	{"BatchWholeCommitsTogether", testBatchWholeCommits},
	{"BatchWholeRollsBack", testBatchWholeRollsBack},
	{"GetAgents", testGetAgents},
}

// testGetAgents: many listings in one read, missing ids left out,
// tombstones included; nothing for no ids.
func testGetAgents(t *testing.T, s store.Store) {
	g, ok := s.(store.AgentsGetter)
	if !ok {
		t.Skipf("%T is not a store.AgentsGetter", s)
	}
	ctx := testContext(t)
	p := newPublisher(t)
	a := p.listing(t, now(), agent.Record{Name: "many-a", Seq: 3, Tags: []string{"alpha"}})
	b := p.listing(t, now(), agent.Record{Name: "many-b", Seq: 4, Tombstone: true})
	missing := p.listing(t, now(), agent.Record{Name: "many-missing", Seq: 1})
	for _, l := range []store.Listing{a, b} {
		if err := s.UpsertRecord(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	got, err := g.GetAgents(ctx, []string{a.Record.ID, missing.Record.ID, b.Record.ID})
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]store.Listing{}
	for _, l := range got {
		byID[l.Record.ID] = l
	}
	if len(got) != 2 || byID[a.Record.ID].Record.Seq != 3 || !byID[b.Record.ID].Record.Tombstone {
		t.Fatalf("GetAgents = %+v", got)
	}
	if one := mustGet(t, s, a.Record.ID); !reflect.DeepEqual(one.Record, byID[a.Record.ID].Record) {
		t.Errorf("GetAgents record differs from GetAgent's:\n%+v\n%+v", byID[a.Record.ID].Record, one.Record)
	}
	if got, err := g.GetAgents(ctx, nil); err != nil || len(got) != 0 {
		t.Errorf("GetAgents(nil) = %v, %v", got, err)
	}
}

// testBatchWholeCommits: InBatchWhole's writes (listings, tags, backends,
// an update of one of them) land together and read back whole.
func testBatchWholeCommits(t *testing.T, s store.Store) {
	ctx := testContext(t)
	at := now()
	p := newPublisher(t)
	one := p.listing(t, at, agent.Record{Name: "whole-one", Seq: 5, Tags: []string{"alpha"}})
	two := p.listing(t, at, agent.Record{Name: "whole-two", Seq: 5})
	newer := p.listing(t, at, agent.Record{Name: "whole-one", Seq: 6, Tags: []string{"beta"}})
	err := batcher(t, s).InBatchWhole(ctx, func(ctx context.Context, tx store.Tx) error {
		for _, l := range []store.Listing{one, two, newer} {
			if err := tx.UpsertRecord(ctx, l); err != nil {
				return err
			}
			if err := tx.PutBackend(ctx, l.Record.ID, agent.Backend{Kind: agent.BackendBuiltin, Builtin: "echo"}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got := mustGet(t, s, one.Record.ID)
	if got.Record.Seq != 6 || len(got.Record.Tags) != 1 || got.Record.Tags[0] != "beta" {
		t.Errorf("whole-one = seq %d tags %v, want 6 [beta]", got.Record.Seq, got.Record.Tags)
	}
	mustGet(t, s, two.Record.ID)
	if b, err := s.GetBackend(ctx, two.Record.ID); err != nil || b.Builtin != "echo" {
		t.Errorf("backend = %+v, %v", b, err)
	}
}

// testBatchWholeRollsBack: an InBatchWhole whose function fails after a
// refused call leaves nothing, not even the writes before the refusal.
func testBatchWholeRollsBack(t *testing.T, s store.Store) {
	ctx := testContext(t)
	p := newPublisher(t)
	l := p.listing(t, now(), agent.Record{Name: "whole-never", Seq: 2})
	older := p.listing(t, now(), agent.Record{Name: "whole-never", Seq: 1})
	err := batcher(t, s).InBatchWhole(ctx, func(ctx context.Context, tx store.Tx) error {
		if err := tx.UpsertRecord(ctx, l); err != nil {
			return err
		}
		if err := tx.PutBackend(ctx, l.Record.ID, agent.Backend{Kind: agent.BackendBuiltin, Builtin: "echo"}); err != nil {
			return err
		}
		return tx.UpsertRecord(ctx, older)
	})
	if !errors.Is(err, store.ErrStale) {
		t.Fatalf("InBatchWhole = %v, want the stale upsert's ErrStale", err)
	}
	if _, err := s.GetAgent(ctx, l.Record.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("listing after a rolled-back batch: %v, want not found", err)
	}
	if _, err := s.GetBackend(ctx, l.Record.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("backend after a rolled-back batch: %v, want not found", err)
	}
}

func batcher(t *testing.T, s store.Store) store.Batcher {
	t.Helper()
	b, ok := s.(store.Batcher)
	if !ok { // a composition (the read cache's suite); both engines are Batchers
		t.Skipf("%T is not a store.Batcher", s)
	}
	return b
}

// testBatchCommits: writes in a batch (listings with the seq rule,
// backends) land together; a stale upsert inside is refused alone.
func testBatchCommits(t *testing.T, s store.Store) {
	ctx := testContext(t)
	at := now()
	p := newPublisher(t)
	one := p.listing(t, at, agent.Record{Name: "batch-one", Seq: 5})
	two := p.listing(t, at, agent.Record{Name: "batch-two", Seq: 5})
	older := p.listing(t, at, agent.Record{Name: "batch-one", Seq: 4})
	err := batcher(t, s).InBatch(ctx, func(ctx context.Context, tx store.Tx) error {
		if err := tx.UpsertRecord(ctx, one); err != nil {
			return err
		}
		if err := tx.PutBackend(ctx, one.Record.ID, agent.Backend{Kind: agent.BackendBuiltin, Builtin: "echo"}); err != nil {
			return err
		}
		if err := tx.UpsertRecord(ctx, older); !errors.Is(err, store.ErrStale) {
			t.Errorf("stale upsert in a batch: %v, want ErrStale", err)
		}
		return tx.UpsertRecord(ctx, two)
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, s, one.Record.ID); got.Record.Seq != 5 {
		t.Errorf("batch-one seq = %d, want 5", got.Record.Seq)
	}
	mustGet(t, s, two.Record.ID)
	if b, err := s.GetBackend(ctx, one.Record.ID); err != nil || b.Builtin != "echo" {
		t.Errorf("backend = %+v, %v", b, err)
	}
}

// testBatchRollsBack: a batch whose function fails leaves nothing.
func testBatchRollsBack(t *testing.T, s store.Store) {
	ctx := testContext(t)
	p := newPublisher(t)
	l := p.listing(t, now(), agent.Record{Name: "never-there", Seq: 1})
	boom := errors.New("boom")
	err := batcher(t, s).InBatch(ctx, func(ctx context.Context, tx store.Tx) error {
		if err := tx.UpsertRecord(ctx, l); err != nil {
			return err
		}
		if err := tx.PutBackend(ctx, l.Record.ID, agent.Backend{Kind: agent.BackendBuiltin, Builtin: "echo"}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("InBatch = %v, want the function's error", err)
	}
	if _, err := s.GetAgent(ctx, l.Record.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("listing after a rolled-back batch: %v, want not found", err)
	}
	if _, err := s.GetBackend(ctx, l.Record.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("backend after a rolled-back batch: %v, want not found", err)
	}
}
