package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

var catalogueCases = []testCase{
	{"CatalogueEnvelopes", testCatalogueEnvelopes},
	{"SyncChanges", testSyncChanges},
	{"SyncCursors", testSyncCursors},
}

// walkCatalogue pages through CatalogueEnvelopes and returns the names of
// the records, opened as a syncing peer would (signature checked), and the
// number of calls it took.
func walkCatalogue(t *testing.T, s store.Store, tag string, limit int, at time.Time) (names []string, calls int) {
	t.Helper()
	var after int64
	for calls = 1; ; calls++ {
		if calls > 1000 {
			t.Fatalf("more than 1000 pages: next does not advance")
		}
		envs, next, err := s.CatalogueEnvelopes(testContext(t), after, tag, limit, at)
		if err != nil {
			t.Fatalf("CatalogueEnvelopes(after %d, tag %q): %v", after, tag, err)
		}
		if len(envs) > limit {
			t.Fatalf("CatalogueEnvelopes returned %d envelopes, limit %d", len(envs), limit)
		}
		for _, env := range envs {
			rec, err := agent.Open(env, at)
			if err != nil {
				t.Fatalf("a served envelope does not open at %v: %v", at, err)
			}
			names = append(names, rec.Name)
		}
		if next == 0 {
			return names, calls
		}
		if len(envs) < limit {
			t.Fatalf("a short page (%d of %d) with next %d: the last page must say next 0", len(envs), limit, next)
		}
		if next <= after {
			t.Fatalf("next %d after %d: not advancing", next, after)
		}
		after = next
	}
}

// testCatalogueEnvelopes: sync serves every record a peer would accept, in
// first-seen order: tombstones too (so deletes propagate), never expired
// ones (the peer would reject them).
func testCatalogueEnvelopes(t *testing.T, s store.Store) {
	at := now()
	p := newPublisher(t)
	if got, _ := walkCatalogue(t, s, "", 10, at); len(got) != 0 {
		t.Fatalf("empty store served %q", got)
	}
	mustUpsert(t, s,
		p.listing(t, at, agent.Record{Name: "sync-a", Tags: []string{"sync"}}),
		p.listing(t, at, agent.Record{Name: "sync-b"}),
		p.listing(t, at, agent.Record{Name: "sync-short", Tags: []string{"sync"}, ExpiresAt: at.Add(30 * time.Minute)}),
		p.listing(t, at, agent.Record{Name: "sync-c", Tags: []string{"sync", "other"}}),
		p.listing(t, at, agent.Record{Name: "sync-gone", Tags: []string{"sync"}, Seq: 1}),
		p.listing(t, at, agent.Record{Name: "sync-d"}),
		p.listing(t, at, agent.Record{Name: "sync-gone", Tags: []string{"sync"}, Seq: 2, Tombstone: true}),
		p.listing(t, at, agent.Record{Name: "sync-a", Tags: []string{"sync"}, Seq: 2}), // keeps its place
	)
	later := at.Add(45 * time.Minute) // sync-short has expired, the rest have not
	want := []string{"sync-a", "sync-b", "sync-c", "sync-gone", "sync-d"}
	for _, c := range []struct{ limit, calls int }{{1, 5}, {2, 3}, {5, 1}, {6, 1}, {100, 1}} {
		got, calls := walkCatalogue(t, s, "", c.limit, later)
		if !slices.Equal(got, want) {
			t.Errorf("limit %d: served %q, want %q", c.limit, got, want)
		}
		if calls != c.calls {
			t.Errorf("limit %d: %d calls, want %d (the last page says next 0, even when full)", c.limit, calls, c.calls)
		}
	}
	for _, c := range []struct {
		tag  string
		want []string
	}{
		{"sync", []string{"sync-a", "sync-c", "sync-gone"}},
		{"other", []string{"sync-c"}},
		{"nope", nil},
	} {
		if got, _ := walkCatalogue(t, s, c.tag, 2, later); !slices.Equal(got, c.want) {
			t.Errorf("tag %s: served %q, want %q", c.tag, got, c.want)
		}
	}
	if got, _ := walkCatalogue(t, s, "", 100, at.Add(2*time.Hour)); len(got) != 0 {
		t.Errorf("after every expiry: served %q", got)
	}
}
