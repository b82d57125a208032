package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

// countCases: how many listings a search matches (store.MatchCounter).
var countCases = []testCase{
	{"CountMatches", testCountMatches},
	{"SinkRemembersClaims", testSinkRemembersClaims},
}

// testSinkRemembersClaims: the node row of a host keeps what this node
// holds of it (its claim capped), and the Sink remembers the signed claim
// itself, so the pages can say "holding N of M"; this node's own and the
// hosts not heard are left out of what the hosts announce.
func testSinkRemembersClaims(t *testing.T, s store.Store) {
	ctx := testContext(t)
	t0 := now()
	self, big, small, unheard := newPublisher(t), newPublisher(t), newPublisher(t), newPublisher(t)
	sink := &store.Sink{Store: s, SelfID: self.peer, Now: func() time.Time { return t0 }}
	for i := range 3 {
		rec, env := big.seal(t, t0, agent.Record{Name: fmt.Sprintf("big-%d", i), ExpiresAt: t0.Add(time.Hour)})
		if _, err := sink.Put(ctx, rec, env); err != nil {
			t.Fatal(err)
		}
	}
	for _, hb := range []agent.Heartbeat{heartbeat(big, t0, 20009), heartbeat(small, t0, 0), heartbeat(self, t0, 5)} {
		if err := sink.NodeSeen(ctx, hb); err != nil {
			t.Fatal(err)
		}
	}
	if row := nodeRow(t, s, big); row.AgentsHosted != 3 {
		t.Errorf("the big host's row says %d hosted, want the 3 held here", row.AgentsHosted)
	}
	claims := sink.HostClaims([]string{big.peer, small.peer, unheard.peer})
	if len(claims) != 2 || claims[big.peer] != 20009 || claims[small.peer] != 0 {
		t.Errorf("HostClaims = %v, want the big host's 20009 and the small one's 0", claims)
	}
	if hosts, listings := sink.Announced(); hosts != 2 || listings != 20009 {
		t.Errorf("Announced = %d hosts, %d listings; want 2 and 20009 (this node's own left out)", hosts, listings)
	}
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
