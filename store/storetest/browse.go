package storetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

// browseCases: the AgentHub browsing orders and tag facets.
var browseCases = []testCase{
	{"PaginateByName", testPaginateByName},
	{"PaginateByNameWhileInserting", testPaginateByNameWhileInserting},
	{"TagFacets", testTagFacets},
	{"TagFacetsNeverLeadNowhere", testTagFacetsNeverLeadNowhere},
}

// nameFixture stores listings whose display names differ in case, repeat,
// and are inserted out of order; the last two fail. It returns the names
// (record names) in the order SortName must give them.
func nameFixture(t *testing.T, s store.Store) []string {
	at := now()
	p := newPublisher(t)
	display := []string{"delta", "Alpha", "charlie", "bravo", "alpha", "Echo", "bravo", "zulu", "Mike", "kilo", "golf", "hotel", "india", "juliet"}
	byName := map[string]string{}
	var ls []store.Listing
	for i, d := range display {
		l := p.listing(t, at, agent.Record{Name: fmt.Sprintf("a%02d", i), DisplayName: d, Description: "common words", Tags: []string{"t"}})
		ls = append(ls, l)
		byName[l.Record.Name] = d
	}
	mustUpsert(t, s, ls...)
	failing := map[string]bool{"a00": true, "a07": true} // delta, zulu
	h := map[string]agent.Health{}
	for _, l := range ls {
		if failing[l.Record.Name] {
			h[l.Record.ID] = agent.Health{State: agent.HealthFailing, CheckedAt: at, SuccessRate: 0}
		}
	}
	mustSetHealth(t, s, p.peer, h)
	var ok, bad []string
	for _, l := range ls {
		if failing[l.Record.Name] {
			bad = append(bad, l.Record.Name)
		} else {
			ok = append(ok, l.Record.Name)
		}
	}
	// Stable: equal keys keep insertion (first-seen) order.
	less := func(a, b string) int { return strings.Compare(strings.ToLower(byName[a]), strings.ToLower(byName[b])) }
	slices.SortStableFunc(ok, less)
	slices.SortStableFunc(bad, less)
	return append(ok, bad...)
}

// testPaginateByName: SortName walks every listing once, by display name
// (case folded), ties in first-seen order, failing agents last; with text
// and tags too.
func testPaginateByName(t *testing.T, s store.Store) {
	want := nameFixture(t, s)
	mustUpsert(t, s, newPublisher(t).listing(t, now(), agent.Record{Name: "zz-other", DisplayName: "aardvark", Description: "other"}))
	for _, limit := range []int{1, 2, 5, 13, 14, 15} {
		for _, q := range []store.SearchQuery{
			{Sort: store.SortName, Q: "common", Limit: limit},
			{Sort: store.SortName, Tags: []string{"t"}, Limit: limit},
		} {
			got := walk(t, s, q, nil)
			if !slices.Equal(got, want) {
				t.Errorf("%+v: walked %q, want %q", q, got, want)
			}
		}
	}
	all := walk(t, s, store.SearchQuery{Sort: store.SortName, Limit: 4}, nil)
	if len(all) != len(want)+1 || all[0] != "zz-other" {
		t.Errorf("by name without filters: %q, want aardvark (zz-other) first then %q", all, want)
	}
	// A health filter keeps one pass only.
	got := walk(t, s, store.SearchQuery{Sort: store.SortName, Health: []string{agent.HealthFailing}, Limit: 1}, nil)
	if !slices.Equal(got, want[len(want)-2:]) {
		t.Errorf("by name, failing only: %q, want %q", got, want[len(want)-2:])
	}
}

// testPaginateByNameWhileInserting: listings arriving between pages neither
// repeat nor hide the listings that were there from the start.
func testPaginateByNameWhileInserting(t *testing.T, s store.Store) {
	at := now()
	p := newPublisher(t)
	var initial []string
	for i := range 20 {
		l := p.listing(t, at, agent.Record{Name: fmt.Sprintf("first-%02d", i), DisplayName: fmt.Sprintf("N%02d", (i*7)%20)})
		mustUpsert(t, s, l)
		initial = append(initial, l.Record.Name)
	}
	added := 0
	got := walk(t, s, store.SearchQuery{Sort: store.SortName, Limit: 3}, func() {
		added++
		mustUpsert(t, s, p.listing(t, at, agent.Record{Name: fmt.Sprintf("late-%02d", added), DisplayName: fmt.Sprintf("N%02d", (added*3)%20)}))
	})
	var seen []string
	for _, n := range got {
		if strings.HasPrefix(n, "first-") {
			seen = append(seen, n)
		}
	}
	wantEachOnce(t, "initial listings by name", seen, initial, true)
	for i, n := range got {
		if slices.Contains(got[:i], n) {
			t.Errorf("%s twice in %q", n, got)
		}
	}
}

// facetFixture: tags go (3), weather (2), rust (1), plus a hidden offline
// listing and a tombstone that must not count.
func facetFixture(t *testing.T, s store.Store) {
	at := now()
	p := newPublisher(t)
	mustUpsert(t, s,
		p.listing(t, at, agent.Record{Name: "go-weather", Description: "common", Tags: []string{"go", "weather"}, Owner: "alice"}),
		p.listing(t, at, agent.Record{Name: "just-weather", Description: "forecasts", Tags: []string{"weather"}}),
		p.listing(t, at, agent.Record{Name: "go-rust", Description: "common", Tags: []string{"go", "rust"}}),
		withStatus(p.listing(t, at, agent.Record{Name: "go-stale", Description: "common", Tags: []string{"go", "stale-only"}}), store.StatusStale),
		withStatus(p.listing(t, at, agent.Record{Name: "gone", Description: "common", Tags: []string{"go", "offline-only"}}), store.StatusOffline),
	)
	dead := p.listing(t, at, agent.Record{Name: "dead", Description: "common", Tags: []string{"go", "dead-only"}})
	mustUpsert(t, s, dead)
	tomb := dead.Record
	tomb.Seq, tomb.Tombstone = 2, true
	tomb.Tags, tomb.Description = nil, ""
	mustUpsert(t, s, p.listing(t, at, tomb))
}

func mustFacets(t *testing.T, s store.Store, q store.SearchQuery, limit int) []store.TagCount {
	t.Helper()
	got, err := s.TagFacets(testContext(t), q, limit)
	if err != nil {
		t.Fatalf("TagFacets(%+v): %v", q, err)
	}
	return got
}

func facetString(tcs []store.TagCount) string {
	var parts []string
	for _, tc := range tcs {
		parts = append(parts, fmt.Sprintf("%s:%d", tc.Tag, tc.Count))
	}
	return strings.Join(parts, " ")
}

func testTagFacets(t *testing.T, s store.Store) {
	facetFixture(t, s)
	for _, c := range []struct {
		q     store.SearchQuery
		limit int
		want  string
	}{
		{store.SearchQuery{}, 10, "go:3 weather:2 rust:1 stale-only:1"},
		{store.SearchQuery{}, 2, "go:3 weather:2"},
		{store.SearchQuery{Statuses: []string{store.StatusOnline}}, 10, "go:2 weather:2 rust:1"},
		{store.SearchQuery{Statuses: []string{store.StatusOffline}}, 10, "go:1 offline-only:1"},
		{store.SearchQuery{Q: "common"}, 10, "go:3 rust:1 stale-only:1 weather:1"},
		{store.SearchQuery{Q: "forecasts"}, 10, "weather:1"},
		{store.SearchQuery{Tags: []string{"weather"}}, 10, "weather:2 go:1"},
		{store.SearchQuery{Tags: []string{"go", "weather"}}, 10, "go:1 weather:1"},
		{store.SearchQuery{Tags: []string{"nope"}}, 10, ""},
		{store.SearchQuery{Owner: "alice"}, 10, "go:1 weather:1"},
		{store.SearchQuery{Health: []string{agent.HealthFailing}}, 10, ""},
		{store.SearchQuery{Health: []string{agent.HealthUnknown}}, 10, "go:3 weather:2 rust:1 stale-only:1"},
		{store.SearchQuery{Q: "zzzz"}, 10, ""},
	} {
		if got := facetString(mustFacets(t, s, c.q, c.limit)); got != c.want {
			t.Errorf("TagFacets(%+v, %d) = %q, want %q", c.q, c.limit, got, c.want)
		}
	}
	// Cursor, limit and sort of the query do not matter.
	base := facetString(mustFacets(t, s, store.SearchQuery{Q: "common"}, 10))
	if got := facetString(mustFacets(t, s, store.SearchQuery{Q: "common", Sort: store.SortName, Limit: 1}, 10)); got != base {
		t.Errorf("facets with sort and limit = %q, want %q", got, base)
	}
	// A write shows at once (a read cache must drop the counts).
	mustUpsert(t, s, newPublisher(t).listing(t, now(), agent.Record{Name: "late", Description: "common", Tags: []string{"rust"}}))
	if got, want := facetString(mustFacets(t, s, store.SearchQuery{Q: "common"}, 10)), "go:3 rust:2 stale-only:1 weather:1"; got != want {
		t.Errorf("facets after an insert = %q, want %q", got, want)
	}
}

// testTagFacetsNeverLeadNowhere: for any filter, each facet added to the
// filter finds exactly as many listings as its count.
func testTagFacetsNeverLeadNowhere(t *testing.T, s store.Store) {
	facetFixture(t, s)
	for _, q := range []store.SearchQuery{{}, {Q: "common"}, {Tags: []string{"go"}}, {Q: "co", Tags: []string{"weather"}}, {Owner: "alice"}} {
		for _, tc := range mustFacets(t, s, q, 100) {
			nq := q
			nq.Tags = append(slices.Clone(q.Tags), tc.Tag)
			nq.Limit = 100
			if got := len(mustSearch(t, s, nq).Listings); got != tc.Count || got == 0 {
				t.Errorf("filter %+v: facet %s:%d finds %d listings", q, tc.Tag, tc.Count, got)
			}
		}
	}
}
