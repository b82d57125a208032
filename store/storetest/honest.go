package storetest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

// honestCases pin the order of a search by relevance against a flood of
// listings from publishers this node never heard (docs/architecture.md "Peers are
// adversaries"): within a relevance tier, online listings before the
// others; tiers first; failing agents last (store.StatusPasses).
var honestCases = []testCase{
	{"HonestFirstWithinTier", testHonestFirstWithinTier},
	{"HonestFirstStatusFilters", testHonestFirstStatusFilters},
	{"PaginateWhileInsertingMixedStatuses", func(t *testing.T, s store.Store) {
		// Both statuses in each tier (tierRecord's i%3).
		testPaginateWhileInserting(t, s, "common", func(i int) string {
			return []string{store.StatusOnline, store.StatusStale}[i/3%2]
		})
	}},
}

// honestFixture: one honest host's listings (online), a rogue's flood
// newer than all of them (stale: no heartbeat ever arrived), in every
// tier of "weather", and a failing agent of each. It returns the page
// order of a search for "weather".
func honestFixture(t *testing.T, s store.Store) []string {
	at := now()
	honest := newPublisher(t)
	rogues := []*publisher{newPublisher(t), newPublisher(t), newPublisher(t), newPublisher(t), newPublisher(t)}
	oracle := honest.listing(t, at, agent.Record{Name: "weather-oracle", Description: "Forecasts for any city."})
	broken := honest.listing(t, at, agent.Record{Name: "weather-broken", Description: "Used to forecast."})
	tagged := honest.listing(t, at, agent.Record{Name: "sky-bot", Description: "Looks up.", Tags: []string{"weather"}})
	described := honest.listing(t, at, agent.Record{Name: "umbrella", Description: "Checks the weather before you leave."})
	mustUpsert(t, s, broken, oracle, tagged, described)
	var flood []string
	for i := range 50 {
		r := rogues[i%len(rogues)]
		l := withStatus(r.listing(t, at, agent.Record{Name: fmt.Sprintf("weather-spam-%02d", i), Description: "Best weather."}), store.StatusStale)
		mustUpsert(t, s, l)
		flood = append(flood, l.Record.Name)
	}
	slices.Reverse(flood) // newest first
	spamTag := withStatus(rogues[0].listing(t, at, agent.Record{Name: "spam-tagged", Description: "Buy now.", Tags: []string{"weather"}}), store.StatusStale)
	spamDesc := withStatus(rogues[1].listing(t, at, agent.Record{Name: "spam-described", Description: "The weather, cheap."}), store.StatusStale)
	spamBroken := withStatus(rogues[2].listing(t, at, agent.Record{Name: "weather-spam-broken", Description: "Broken."}), store.StatusStale)
	mustUpsert(t, s, spamTag, spamDesc, spamBroken)
	mustSetHealth(t, s, honest.peer, map[string]agent.Health{broken.Record.ID: health(agent.HealthFailing, at)})
	mustSetHealth(t, s, rogues[2].peer, map[string]agent.Health{spamBroken.Record.ID: health(agent.HealthFailing, at)})

	want := append([]string{"weather-oracle"}, flood...)
	return append(want, "sky-bot", "spam-tagged", "umbrella", "spam-described", "weather-broken", "weather-spam-broken")
}

// testHonestFirstWithinTier: 50 stale title matches newer than one online
// title match → the online one is first; a stale title match still ranks
// above an online tag or description match (tiers first); failing agents
// last, online first among them too; every page size walks each listing
// exactly once across the boundaries. A search sorted newest first keeps
// to time.
func testHonestFirstWithinTier(t *testing.T, s store.Store) {
	want := honestFixture(t, s)
	for _, limit := range []int{1, 2, 3, 7, 20, 51, 100} {
		got := walk(t, s, store.SearchQuery{Q: "weather", Limit: limit}, nil)
		if !slices.Equal(got, want) {
			t.Errorf("search weather, limit %d:\n got %q\nwant %q", limit, got, want)
		}
	}
	for _, q := range []string{"Weather", "wea"} {
		if got := mustSearch(t, s, store.SearchQuery{Q: q, Limit: 1}).Listings; len(got) != 1 || got[0].Record.Name != "weather-oracle" {
			t.Errorf("search %q: first %q, want weather-oracle", q, names(got))
		}
	}
	got := walk(t, s, store.SearchQuery{Q: "weather", Limit: 5, PublicOnly: true}, nil)
	if !slices.Equal(got, want) {
		t.Errorf("search weather, PublicOnly:\n got %q\nwant %q", got, want)
	}
	newest := mustSearch(t, s, store.SearchQuery{Q: "weather", Sort: store.SortNewest, Limit: 1}).Listings
	if len(newest) != 1 || newest[0].Record.Name != "spam-described" {
		t.Errorf("search weather sorted newest first: %q, want spam-described (the newest that is not failing)", names(newest))
	}
}

// testHonestFirstStatusFilters: explicit statuses and health filters keep
// the order: offline (when asked for) goes with stale, after online, and a
// pass the filters leave empty is skipped across pages.
func testHonestFirstStatusFilters(t *testing.T, s store.Store) {
	at := now()
	honest := newPublisher(t)
	mustUpsert(t, s, honest.listing(t, at, agent.Record{Name: "weather-oracle", Description: "Forecasts."}))
	mustUpsert(t, s,
		withStatus(honest.listing(t, at, agent.Record{Name: "weather-gone", Description: "Expired."}), store.StatusOffline),
		withStatus(honest.listing(t, at, agent.Record{Name: "weather-quiet", Description: "Missed heartbeats."}), store.StatusStale),
		honest.listing(t, at, agent.Record{Name: "rain-desk", Description: "Weather words."}),
	)
	for _, c := range []struct {
		statuses []string
		want     []string
	}{
		{nil, []string{"weather-oracle", "weather-quiet", "rain-desk"}},
		{[]string{store.StatusOnline}, []string{"weather-oracle", "rain-desk"}},
		{[]string{store.StatusStale}, []string{"weather-quiet"}},
		{[]string{store.StatusOffline, store.StatusOnline}, []string{"weather-oracle", "weather-gone", "rain-desk"}},
		{[]string{store.StatusStale, store.StatusOffline, store.StatusOnline, store.StatusStale}, []string{"weather-oracle", "weather-quiet", "weather-gone", "rain-desk"}},
	} {
		for _, limit := range []int{1, 2, 20} {
			got := walk(t, s, store.SearchQuery{Q: "weather", Statuses: c.statuses, Limit: limit}, nil)
			if !slices.Equal(got, c.want) {
				t.Errorf("search weather, statuses %q, limit %d: %q, want %q", c.statuses, limit, got, c.want)
			}
		}
	}
	got := walk(t, s, store.SearchQuery{Q: "weather", Health: []string{agent.HealthUnknown}, Limit: 1}, nil)
	if want := []string{"weather-oracle", "weather-quiet", "rain-desk"}; !slices.Equal(got, want) {
		t.Errorf("search weather, health unknown: %q, want %q", got, want)
	}
}
