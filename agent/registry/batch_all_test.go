package registry_test

import (
	"fmt"
	"testing"

	"github.com/agentsite/agentsite/agent/registry"
	"github.com/agentsite/agentsite/agent/registry/registrytest"
	"github.com/agentsite/agentsite/store/sqlite/sqlitetest"
)

// TestBatchAllIsOneTransactionPerChunk: a batch held at once (an API
// request) is written registry.BatchChunk items a transaction, in order,
// each chunk's listings in one page; a request handed to Batch's workers
// was cut into as many small transactions as the workers happened to
// find items queued.
func TestBatchAllIsOneTransactionPerChunk(t *testing.T) {
	st := sqlitetest.Open(t)
	ps := &pageStore{Store: st}
	env := registrytest.New(t, ps)
	for _, c := range []struct{ items, transactions int }{
		{registry.BatchChunk, 1},
		{registry.BatchChunk + 20, 2},
	} {
		ps.whole, ps.single, ps.pages, ps.pageRecords = 0, 0, 0, 0
		items := make([]registry.BatchItem, c.items)
		for i := range items {
			items[i] = registry.BatchItem{Index: i, Input: registrytest.Input(fmt.Sprintf("all-%d-%04d", c.items, i))}
		}
		var got []registry.BatchResult
		if err := env.Registry.BatchAll(t.Context(), registry.Operator, items, 8, func(r registry.BatchResult) { got = append(got, r) }); err != nil {
			t.Fatal(err)
		}
		if len(got) != c.items {
			t.Fatalf("%d results for %d items", len(got), c.items)
		}
		for i, r := range got {
			if r.Index != i || r.Outcome != registry.OutcomeCreated {
				t.Fatalf("result %d: item %d %s (%v), want item %d created", i, r.Index, r.Outcome, r.Err, i)
			}
		}
		if ps.whole != c.transactions || ps.pages != c.transactions || ps.pageRecords != c.items || ps.single != 0 {
			t.Errorf("%d items: %d transactions, %d pages of %d listings, %d one by one; want %d transactions of one page each",
				c.items, ps.whole, ps.pages, ps.pageRecords, ps.single, c.transactions)
		}
	}
}
