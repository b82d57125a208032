package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/store/postgres/pgtest"
	"github.com/agentsite/agentsite/store/storeopen"
)

// pageCounter is a store that counts the transactions a seed runs and the
// pages written in one statement (store.PageWriter).
type pageCounter struct {
	store.Store
	b            store.Batcher
	transactions atomic.Int64
	pages        atomic.Int64
	rows         atomic.Int64
}

func (c *pageCounter) InBatch(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	c.transactions.Add(1)
	return c.b.InBatch(ctx, fn)
}

func (c *pageCounter) InBatchWhole(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	c.transactions.Add(1)
	return c.b.InBatchWhole(ctx, func(ctx context.Context, tx store.Tx) error {
		return fn(ctx, countingTx{Tx: tx, c: c})
	})
}

// countingTx counts the rows its PageWriter writes.
type countingTx struct {
	store.Tx
	c *pageCounter
}

func (t countingTx) UpsertRecords(ctx context.Context, ls []store.Listing) ([]bool, error) {
	pw, ok := t.Tx.(store.PageWriter)
	if !ok { // the Sink writes the page again, a listing at a time
		return nil, fmt.Errorf("the engine's Tx %T writes no pages", t.Tx)
	}
	t.c.pages.Add(1)
	t.c.rows.Add(int64(len(ls)))
	return pw.UpsertRecords(ctx, ls)
}

// TestSeedPages: the seeder stores every listing it is asked for, each
// as its publisher sealed it, through the sync page path: one transaction
// and one statement (store.PageWriter) per seedPage listings, not one per
// listing; and it says how far it got.
func TestSeedPages(t *testing.T) {
	st, _, err := storeopen.Open(context.Background(), "", t.TempDir(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	testSeedPages(t, st)
}

// TestSeedPagesPostgres is TestSeedPages on Postgres (store.PageWriter
// there too).
func TestSeedPagesPostgres(t *testing.T) {
	testSeedPages(t, pgtest.Open(t))
}

func testSeedPages(t *testing.T, st store.Store) {
	ctx := context.Background()
	b, ok := st.(store.Batcher)
	if !ok {
		t.Fatalf("the store %T runs no transactions", st)
	}
	c := &pageCounter{Store: st, b: b}
	pubs, err := newPublishers(3)
	if err != nil {
		t.Fatal(err)
	}
	const n = 2*seedPage + 37 // two whole pages and a short one
	sink := &store.Sink{Store: c, SelfID: "<none>", MaxPerPublisher: n}
	var lines atomic.Int64
	now := time.Now().UTC()
	if err := seedPages(ctx, sink, pubs, n, 1, now, func(string, ...any) { lines.Add(1) }); err != nil {
		t.Fatal(err)
	}
	stats, err := st.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Agents != n {
		t.Errorf("%d listings stored, want %d", stats.Agents, n)
	}
	if got := c.transactions.Load(); got != 3 {
		t.Errorf("%d transactions, want 3 (one per page of %d)", got, seedPage)
	}
	if got, rows := c.pages.Load(), c.rows.Load(); got != 3 || rows != n {
		t.Errorf("%d page statements of %d rows, want 3 of %d", got, rows, n)
	}
	if lines.Load() == 0 {
		t.Error("no progress line")
	}
	for _, i := range []int{0, seedPage, n - 1} {
		want, env, err := sealOne(pubs[i%len(pubs)], i, now)
		if err != nil {
			t.Fatal(err)
		}
		got, err := st.GetAgent(ctx, want.ID)
		if err != nil {
			t.Fatalf("listing %d (%s): %v", i, want.Name, err)
		}
		if got.Record.Name != want.Name || got.Record.Publisher != pubs[i%len(pubs)].id || string(got.Envelope) != string(env) {
			t.Errorf("listing %d stored as %s by %s, want %s by %s with its envelope", i, got.Record.Name, got.Record.Publisher, want.Name, pubs[i%len(pubs)].id)
		}
	}
}

// countsCounter is a store that counts the quota counts asked of it.
type countsCounter struct {
	store.Store
	counts atomic.Int64
}

func (c *countsCounter) CountPublished(ctx context.Context, publisher string, limit int) (int, error) {
	c.counts.Add(1)
	return c.Store.CountPublished(ctx, publisher, limit)
}

// TestSeedQuotaFromTally: with --quota-counts seeder the Sink asks the
// store for no publisher's count, and the tally it gets instead is the
// count the store gives after the seed.
func TestSeedQuotaFromTally(t *testing.T) {
	ctx := context.Background()
	st, _, err := storeopen.Open(ctx, "", t.TempDir(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c := &countsCounter{Store: st}
	ts := newTalliedStore(c, st.(store.Batcher))
	pubs, err := newPublishers(3)
	if err != nil {
		t.Fatal(err)
	}
	const n = 2*seedPage + 37
	sink := &store.Sink{Store: ts, SelfID: "<none>", MaxPerPublisher: n}
	if err := seedPages(ctx, sink, pubs, n, 2, time.Now().UTC(), func(string, ...any) {}); err != nil {
		t.Fatal(err)
	}
	if got := c.counts.Load(); got != 0 {
		t.Errorf("the store was asked for %d counts, want 0", got)
	}
	for _, p := range pubs {
		want, err := st.CountPublished(ctx, p.id, n)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := ts.CountPublished(ctx, p.id, n); got != want || want == 0 {
			t.Errorf("publisher %s: tally %d, the store counts %d", p.id, got, want)
		}
		if got, _ := ts.CountPublished(ctx, p.id, 5); got != 5 {
			t.Errorf("publisher %s under a limit of 5: tally %d, want 5", p.id, got)
		}
	}
}
