package store_test

import (
	"slices"
	"testing"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

// TestHealthPasses: without a health filter a search walks the agents that
// are not failing, then the failing ones; a filter keeps only the passes
// that can match it.
func TestHealthPasses(t *testing.T) {
	for _, tc := range []struct {
		health []string
		want   []bool
	}{
		{nil, []bool{false, true}},
		{[]string{agent.HealthHealthy}, []bool{false}},
		{[]string{agent.HealthFailing}, []bool{true}},
		{[]string{agent.HealthFailing, agent.HealthFailing}, []bool{true}},
		{[]string{agent.HealthFailing, agent.HealthDegraded}, []bool{false, true}},
	} {
		if got := store.HealthPasses(tc.health); !slices.Equal(got, tc.want) {
			t.Errorf("HealthPasses(%v) = %v, want %v", tc.health, got, tc.want)
		}
	}
}

// TestStatusPasses: a relevance tier walks its online listings, then the
// rest of the statuses asked for; a pass nothing can match is left out.
func TestStatusPasses(t *testing.T) {
	for _, tc := range []struct {
		statuses []string
		want     []store.StatusPass
	}{
		{nil, []store.StatusPass{{Statuses: []string{store.StatusOnline}}, {Stale: true, Statuses: []string{store.StatusStale}}}},
		{[]string{store.StatusOnline, store.StatusOnline}, []store.StatusPass{{Statuses: []string{store.StatusOnline}}}},
		{[]string{store.StatusStale}, []store.StatusPass{{Stale: true, Statuses: []string{store.StatusStale}}}},
		{[]string{store.StatusOffline, store.StatusOnline, store.StatusStale, store.StatusOffline}, []store.StatusPass{
			{Statuses: []string{store.StatusOnline}}, {Stale: true, Statuses: []string{store.StatusOffline, store.StatusStale}}}},
	} {
		got := store.StatusPasses(tc.statuses)
		if !slices.EqualFunc(got, tc.want, func(a, b store.StatusPass) bool { return a.Stale == b.Stale && slices.Equal(a.Statuses, b.Statuses) }) {
			t.Errorf("StatusPasses(%q) = %+v, want %+v", tc.statuses, got, tc.want)
		}
	}
}

// TestCursorPlace: the page order is (failing, tier, stale); a pass
// before the cursor's is skipped, the cursor's own continues.
func TestCursorPlace(t *testing.T) {
	cur := store.Cursor{Rank: 2, Pos: 10, Stale: true}
	for _, tc := range []struct {
		failing    bool
		rank       float64
		stale      bool
		before, at bool
	}{
		{false, 1, true, true, false},
		{false, 2, false, true, false},
		{false, 2, true, false, true},
		{false, 3, false, false, false},
		{true, 1, false, false, false},
	} {
		before, at := cur.Place(tc.failing, tc.rank, tc.stale)
		if before != tc.before || at != tc.at {
			t.Errorf("Place(%v, %v, %v) = %v, %v; want %v, %v", tc.failing, tc.rank, tc.stale, before, at, tc.before, tc.at)
		}
	}
	if before, _ := (store.Cursor{Failing: true, Rank: 1}).Place(false, 3, true); !before {
		t.Error("a pass of the agents that are not failing is not before a cursor among the failing ones")
	}
}
