package storetest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

// sinkPageCases: a catalogue sync page enters the store through the Sink
// in one transaction, each record judged as Put judges it (one
// transaction a record was most of a mirror fill's CPU).
var sinkPageCases = []testCase{
	{"SinkPutAllOneTransactionAPage", testSinkPutAllOneTransaction},
}

// txCounter is a Store that counts the transactions that reach it: a
// batch, or a write of its own outside one.
type txCounter struct {
	store.Store
	batches, whole, single atomic.Int64
}

func (c *txCounter) UpsertRecord(ctx context.Context, l store.Listing) error {
	c.single.Add(1)
	return c.Store.UpsertRecord(ctx, l)
}

func (c *txCounter) InBatch(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	c.batches.Add(1)
	return c.Store.(store.Batcher).InBatch(ctx, fn)
}

func (c *txCounter) InBatchWhole(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	c.whole.Add(1)
	return c.Store.(store.Batcher).InBatchWhole(ctx, fn)
}

func (c *txCounter) reset() { c.batches.Store(0); c.whole.Store(0); c.single.Store(0) }

// testSinkPutAllOneTransaction: a page of 64 records is written in one
// transaction, with what Put would have decided for each: the heard
// host's listings online and the others stale, a record already held
// unchanged, the publisher's quota counted along the page (its held
// listings and the page's updates not charged as new). One record whose
// write fails (a seq the engines cannot store) and one over the quota are
// refused alone: the other 62 are stored, in a second transaction with a
// savepoint per record.
func testSinkPutAllOneTransaction(t *testing.T, s store.Store) {
	if _, ok := s.(store.Batcher); !ok {
		t.Skip("the store runs no transactions")
	}
	ctx := testContext(t)
	t0 := now()
	self, heard, unheard, capped := newPublisher(t), newPublisher(t), newPublisher(t), newPublisher(t)
	c := &txCounter{Store: s}
	sink := &store.Sink{Store: c, SelfID: self.peer, MaxPerPublisher: 20, Now: func() time.Time { return t0 }}
	if err := sink.NodeSeen(ctx, heartbeat(heard, t0, 1)); err != nil {
		t.Fatal(err)
	}
	exp := t0.Add(24 * time.Hour)
	for i := range 5 { // capped holds 5, heard 1
		rec, env := capped.seal(t, t0, agent.Record{Name: fmt.Sprintf("capped-%02d", i), ExpiresAt: exp})
		if _, err := sink.Put(ctx, rec, env); err != nil {
			t.Fatal(err)
		}
	}
	same, sameEnv := heard.seal(t, t0, agent.Record{Name: "heard-same", ExpiresAt: exp})
	if _, err := sink.Put(ctx, same, sameEnv); err != nil {
		t.Fatal(err)
	}

	var recs []*agent.Record
	var envs [][]byte
	add := func(p *publisher, name string, seq uint64) {
		rec, env := p.seal(t, t0, agent.Record{Name: name, Seq: seq, ExpiresAt: exp})
		recs, envs = append(recs, rec), append(envs, env)
	}
	recs, envs = append(recs, same), append(envs, sameEnv) // held already: unchanged
	for i := range 19 {                                    // with heard-same, 20: its limit
		add(heard, fmt.Sprintf("heard-%02d", i), 1)
	}
	add(self, "own-00", 1) // this node's own: online, local, no quota
	add(self, "own-01", 1)
	add(unheard, "unheard-bad-seq", math.MaxUint64) // valid, signed, and no engine can store it
	bad := recs[len(recs)-1]
	for i := range 20 {
		add(unheard, fmt.Sprintf("unheard-%02d", i), 1)
	}
	for i := range 5 { // updates of what capped holds: no new ids
		add(capped, fmt.Sprintf("capped-%02d", i), 2)
	}
	for i := 5; i < 21; i++ { // 16 new ids: 15 fit under 20, the last does not
		add(capped, fmt.Sprintf("capped-%02d", i), 1)
	}
	if len(recs) != 64 {
		t.Fatalf("the page has %d records, want 64", len(recs))
	}
	c.reset()
	changed, errs := sink.PutAll(ctx, recs, envs)
	if len(changed) != len(recs) || len(errs) != len(recs) {
		t.Fatalf("PutAll returned %d outcomes and %d errors for %d records", len(changed), len(errs), len(recs))
	}
	stored := 0
	for i, rec := range recs {
		switch {
		case rec.Name == "heard-same":
			if changed[i] || errs[i] != nil {
				t.Errorf("%s (held already): changed %v, err %v; want unchanged", rec.Name, changed[i], errs[i])
			}
		case rec.Name == "unheard-bad-seq":
			if errs[i] == nil || errors.Is(errs[i], agent.ErrOverQuota) || changed[i] {
				t.Errorf("%s: changed %v, err %v; want the write's error", rec.Name, changed[i], errs[i])
			}
		case rec.Name == "capped-20":
			if !errors.Is(errs[i], agent.ErrOverQuota) || changed[i] {
				t.Errorf("%s (the 21st of its publisher): changed %v, err %v; want agent.ErrOverQuota", rec.Name, changed[i], errs[i])
			}
		default:
			if errs[i] != nil || !changed[i] {
				t.Errorf("%s: changed %v, err %v; want stored", rec.Name, changed[i], errs[i])
				continue
			}
			stored++
			want := store.StatusStale
			if rec.Publisher == heard.peer || rec.Publisher == self.peer {
				want = store.StatusOnline
			}
			got := mustGet(t, s, rec.ID)
			if got.Status != want || got.Record.Seq != rec.Seq || got.Local != (rec.Publisher == self.peer) {
				t.Errorf("%s stored %s seq %d local %v, want %s seq %d", rec.Name, got.Status, got.Record.Seq, got.Local, want, rec.Seq)
			}
		}
	}
	if stored != 61 {
		t.Errorf("%d of the page's records stored, want 61 (64 less one held already, one that cannot be written, one over the quota)", stored)
	}
	if _, err := s.GetAgent(ctx, bad.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the record that cannot be written: GetAgent = %v, want store.ErrNotFound", err)
	}
	// One try without savepoints, rolled back at the failing write, then
	// the page again with a savepoint per record: 2 transactions.
	if w, b, one := c.whole.Load(), c.batches.Load(), c.single.Load(); w != 1 || b != 1 || one != 0 {
		t.Errorf("the page with a failing record took %d whole transactions, %d with savepoints and %d writes of their own; want 1, 1, 0", w, b, one)
	}

	// A clean page: one transaction. With tags, an update that changes
	// them, and a record held already.
	recs, envs = recs[:0], envs[:0]
	other := newPublisher(t)
	addTagged := func(p *publisher, name string, seq uint64, tags ...string) {
		rec, env := p.seal(t, t0, agent.Record{Name: name, Seq: seq, ExpiresAt: exp, Tags: tags})
		recs, envs = append(recs, rec), append(envs, env)
	}
	for i := range 8 {
		addTagged(other, fmt.Sprintf("other-%02d", i), 1, "page-tag")
	}
	addTagged(other, "other-untagged", 1)
	addTagged(heard, "heard-00", 2, "page-tag", "updated")
	recs, envs = append(recs, same), append(envs, sameEnv)
	c.reset()
	changed, errs = sink.PutAll(ctx, recs, envs)
	for i := range recs {
		if want := recs[i].Name != "heard-same"; errs[i] != nil || changed[i] != want {
			t.Errorf("%s: changed %v, err %v; want changed %v", recs[i].Name, changed[i], errs[i], want)
		}
	}
	if w, b, one := c.whole.Load(), c.batches.Load(), c.single.Load(); w != 1 || b != 0 || one != 0 {
		t.Errorf("a clean page took %d whole transactions, %d with savepoints and %d writes of their own; want 1, 0, 0", w, b, one)
	}
	if got := mustGet(t, s, recs[9].ID); got.Record.Seq != 2 || len(got.Record.Tags) != 2 || got.Status != store.StatusOnline {
		t.Errorf("heard-00 updated in a page: seq %d, tags %v, %s; want seq 2, 2 tags, online", got.Record.Seq, got.Record.Tags, got.Status)
	}
	tags, err := s.ListTags(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, tc := range tags {
		counts[tc.Tag] = tc.Count
	}
	if counts["page-tag"] != 9 || counts["updated"] != 1 {
		t.Errorf("tags after the page: %v; want page-tag 9, updated 1", tags)
	}
	// A later page of capped (its count remembered from the first, 20):
	// its updates pass, a new id does not.
	recs, envs = recs[:0], envs[:0]
	for i := range 5 {
		add(capped, fmt.Sprintf("capped-%02d", i), 3)
	}
	add(capped, "capped-21", 1)
	changed, errs = sink.PutAll(ctx, recs, envs)
	for i, rec := range recs {
		if rec.Name == "capped-21" {
			if !errors.Is(errs[i], agent.ErrOverQuota) || changed[i] {
				t.Errorf("%s in a later page: changed %v, err %v; want agent.ErrOverQuota", rec.Name, changed[i], errs[i])
			}
		} else if errs[i] != nil || !changed[i] {
			t.Errorf("%s (an update) in a later page: changed %v, err %v; want stored", rec.Name, changed[i], errs[i])
		}
	}
	// capped holds its limit, not one more.
	n, err := s.CountPublished(ctx, capped.peer, 100)
	if err != nil || n != 20 {
		t.Errorf("capped holds %d listings (err %v), want its limit, 20", n, err)
	}
}
