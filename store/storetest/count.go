package storetest

import (
	"testing"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

// countCases: how many listings a search matches (store.MatchCounter).
var countCases = []testCase{
	{"CountMatches", testCountMatches},
}

// testCountMatches: a search's count is what its pages hold together,
// for text, tags, statuses, health, owner and publishers; an engine that
// stops at upTo says the count is not exact.
func testCountMatches(t *testing.T, s store.Store) {
	mc, ok := s.(store.MatchCounter)
	if !ok {
		t.Skip("the store does not count a search's matches")
	}
	facetFixture(t, s)
	p := newPublisher(t)
	mustUpsert(t, s, p.listing(t, now(), agent.Record{Name: "other-pub", Description: "common", Tags: []string{"go"}}))
	for _, c := range []struct {
		q    store.SearchQuery
		want int
	}{
		{store.SearchQuery{}, 5},
		{store.SearchQuery{Limit: 1, Sort: store.SortName}, 5},
		{store.SearchQuery{Statuses: []string{store.StatusOnline}}, 4},
		{store.SearchQuery{Statuses: []string{store.StatusOffline}}, 1},
		{store.SearchQuery{Q: "common"}, 4},
		{store.SearchQuery{Tags: []string{"weather"}}, 2},
		{store.SearchQuery{Tags: []string{"go", "weather"}}, 1},
		{store.SearchQuery{Owner: "alice"}, 1},
		{store.SearchQuery{Health: []string{agent.HealthFailing}}, 0},
		{store.SearchQuery{Q: "zzzz"}, 0},
		{store.SearchQuery{Publishers: []string{p.peer}}, 1},
		{store.SearchQuery{Q: "common", Publishers: []string{p.peer}}, 1},
	} {
		n, exact, err := mc.CountMatches(testContext(t), c.q, 100)
		if err != nil {
			t.Fatalf("CountMatches(%+v): %v", c.q, err)
		}
		if n != c.want || !exact {
			t.Errorf("CountMatches(%+v) = %d (exact %v), want %d", c.q, n, exact, c.want)
		}
		if pages := countPages(t, s, c.q); pages != c.want {
			t.Errorf("the pages of %+v hold %d listings, the count says %d", c.q, pages, c.want)
		}
	}
	// Counted only so far: at least upTo, not exact (the index counts
	// exactly whatever upTo).
	n, exact, err := mc.CountMatches(testContext(t), store.SearchQuery{}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if exact && n != 5 || !exact && n != 2 {
		t.Errorf("CountMatches up to 2 = %d (exact %v), want 2 not exact, or 5 exact", n, exact)
	}
}

// countPages pages through q's search and counts the listings.
func countPages(t *testing.T, s store.Store, q store.SearchQuery) int {
	t.Helper()
	q.Limit, q.Cursor = 2, ""
	n := 0
	for range 100 {
		page, err := s.SearchAgents(testContext(t), q)
		if err != nil {
			t.Fatalf("SearchAgents(%+v): %v", q, err)
		}
		n += len(page.Listings)
		if page.NextCursor == "" {
			return n
		}
		q.Cursor = page.NextCursor
	}
	t.Fatalf("the pages of %+v do not end", q)
	return n
}
