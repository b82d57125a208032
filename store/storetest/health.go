package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

var healthCases = []testCase{
	{"SetHealthOnlyForTheHost", testSetHealthOnlyForTheHost},
	{"SearchHealthFilter", testSearchHealthFilter},
	{"SearchRanksFailingLast", testSearchRanksFailingLast},
	{"PaginateAcrossFailing", testPaginateAcrossFailing},
}

// health is a summary with every field set, times cut to the second as
// heartbeats carry them.
func health(state string, at time.Time) agent.Health {
	return agent.Health{
		State: state, LatencyMS: 120, SuccessRate: 0.875,
		LastOKAt: at.Add(-time.Minute).Truncate(time.Second), CheckedAt: at.Truncate(time.Second),
	}
}

func wantHealth(t testing.TB, what string, got, want agent.Health) {
	t.Helper()
	if got.State != want.State || got.LatencyMS != want.LatencyMS || got.SuccessRate != want.SuccessRate {
		t.Errorf("%s: health %+v, want %+v", what, got, want)
	}
	wantTime(t, what+": LastOKAt", got.LastOKAt, want.LastOKAt)
	wantTime(t, what+": CheckedAt", got.CheckedAt, want.CheckedAt)
}

func mustSetHealth(t testing.TB, s store.Store, host string, h map[string]agent.Health) int {
	t.Helper()
	n, err := s.SetHealth(testContext(t), host, h)
	if err != nil {
		t.Fatalf("SetHealth(%s): %v", host, err)
	}
	return n
}

// A host sets the health of its own agents only: a claim about another
// host's agent and an unknown id change nothing. A new version of the
// record keeps the health; an unchanged report writes nothing.
func testSetHealthOnlyForTheHost(t *testing.T, s store.Store) {
	at := now()
	p, h1, h2 := newPublisher(t), newPublisher(t), newPublisher(t)
	a := p.listing(t, at, hostedBy(h1, agent.Record{Name: "h1-a"}))
	b := p.listing(t, at, hostedBy(h1, agent.Record{Name: "h1-b"}))
	other := p.listing(t, at, hostedBy(h2, agent.Record{Name: "h2-a"}))
	mustUpsert(t, s, a, b, other)
	unknown := agent.Health{State: agent.HealthUnknown}
	wantHealth(t, "new listing", mustGet(t, s, a.Record.ID).Health, unknown)

	failing := health(agent.HealthFailing, at)
	n := mustSetHealth(t, s, h1.peer, map[string]agent.Health{
		a.Record.ID:            failing,
		other.Record.ID:        health(agent.HealthHealthy, at),
		"not-a-known-agent-id": health(agent.HealthHealthy, at),
	})
	if n != 1 {
		t.Errorf("SetHealth(h1: own, h2's, unknown) changed %d listings, want 1", n)
	}
	wantHealth(t, "h1's agent", mustGet(t, s, a.Record.ID).Health, failing)
	wantHealth(t, "h1's agent left out", mustGet(t, s, b.Record.ID).Health, unknown)
	wantHealth(t, "h2's agent claimed by h1", mustGet(t, s, other.Record.ID).Health, unknown)
	if n := mustSetHealth(t, s, h1.peer, map[string]agent.Health{a.Record.ID: failing}); n != 0 {
		t.Errorf("the same health again changed %d listings, want 0", n)
	}

	v2 := p.listing(t, at, hostedBy(h1, agent.Record{Name: "h1-a", Seq: 2, Description: "v2"}))
	mustUpsert(t, s, v2)
	wantHealth(t, "after a record update", mustGet(t, s, a.Record.ID).Health, failing)

	// Zero times round-trip as zero.
	bare := agent.Health{State: agent.HealthDegraded}
	if n := mustSetHealth(t, s, h1.peer, map[string]agent.Health{a.Record.ID: bare}); n != 1 {
		t.Errorf("SetHealth(degraded, no times) changed %d listings, want 1", n)
	}
	wantHealth(t, "degraded, no times", mustGet(t, s, a.Record.ID).Health, bare)
	if n := mustSetHealth(t, s, h1.peer, nil); n != 0 {
		t.Errorf("SetHealth(nothing) changed %d listings", n)
	}
}

// healthFixture: one agent per state of one host, all matching "bot",
// inserted healthy, degraded, failing, unknown.
func healthFixture(t *testing.T, s store.Store) {
	at := now()
	p := newPublisher(t)
	h := map[string]agent.Health{}
	for _, st := range []string{agent.HealthHealthy, agent.HealthDegraded, agent.HealthFailing, agent.HealthUnknown} {
		l := p.listing(t, at, agent.Record{Name: st + "-bot"})
		mustUpsert(t, s, l)
		h[l.Record.ID] = health(st, at)
	}
	// Searched once before, so a read cache holds the old answer.
	mustSearch(t, s, store.SearchQuery{Health: []string{agent.HealthFailing}})
	if n := mustSetHealth(t, s, p.peer, h); n != 4 {
		t.Fatalf("SetHealth changed %d listings, want 4", n)
	}
}

func testSearchHealthFilter(t *testing.T, s store.Store) {
	healthFixture(t, s)
	for _, c := range []struct {
		q    store.SearchQuery
		want []string
	}{
		{store.SearchQuery{Health: []string{agent.HealthFailing}}, []string{"failing-bot"}},
		{store.SearchQuery{Health: []string{agent.HealthHealthy, agent.HealthUnknown}}, []string{"healthy-bot", "unknown-bot"}},
		{store.SearchQuery{Health: []string{agent.HealthDegraded, agent.HealthFailing, agent.HealthDegraded}}, []string{"degraded-bot", "failing-bot"}},
		{store.SearchQuery{Q: "bot", Health: []string{agent.HealthHealthy}}, []string{"healthy-bot"}},
		{store.SearchQuery{Q: "bot", Health: []string{agent.HealthFailing, agent.HealthUnknown}}, []string{"unknown-bot", "failing-bot"}},
		{store.SearchQuery{Health: []string{"no-such-state"}}, nil},
		{store.SearchQuery{Health: []string{"'; drop table agents; --", "\x00"}}, nil},
	} {
		got := mustSearch(t, s, c.q).Listings
		wantNameSet(t, fmt.Sprintf("search %+q", c.q.Health), got, c.want...)
		for _, l := range got {
			if l.Health.State+"-bot" != l.Record.Name {
				t.Errorf("%s has health %q", l.Record.Name, l.Health.State)
			}
		}
	}
}

// Ranking: with equal text relevance, and without text, a failing agent
// comes after a healthy one whatever their age; failing agents come last
// even after listings that match the text less well.
func testSearchRanksFailingLast(t *testing.T, s store.Store) {
	at := now()
	p := newPublisher(t)
	healthy := p.listing(t, at, agent.Record{Name: "alpha-weather", Description: "Forecasts."})
	weak := p.listing(t, at, agent.Record{Name: "sky-helper", Description: "Knows the weather."})
	failing := p.listing(t, at, agent.Record{Name: "beta-weather", Description: "Forecasts."}) // newest
	mustUpsert(t, s, healthy, weak, failing)
	// Before any health: newest first, equal relevance.
	wantNames(t, "no health yet, search weather", mustSearch(t, s, store.SearchQuery{Q: "weather"}).Listings, "beta-weather", "alpha-weather", "sky-helper")
	wantNames(t, "no health yet, no text", mustSearch(t, s, store.SearchQuery{}).Listings, "beta-weather", "sky-helper", "alpha-weather")

	mustSetHealth(t, s, p.peer, map[string]agent.Health{
		healthy.Record.ID: health(agent.HealthHealthy, at),
		failing.Record.ID: health(agent.HealthFailing, at),
	})
	wantNames(t, "search weather", mustSearch(t, s, store.SearchQuery{Q: "weather"}).Listings, "alpha-weather", "sky-helper", "beta-weather")
	wantNames(t, "no text", mustSearch(t, s, store.SearchQuery{}).Listings, "sky-helper", "alpha-weather", "beta-weather")
	wantNames(t, "a status filter keeps the order", mustSearch(t, s, store.SearchQuery{Statuses: []string{store.StatusOnline}}).Listings, "sky-helper", "alpha-weather", "beta-weather")

	// Recovered: back to newest first.
	mustSetHealth(t, s, p.peer, map[string]agent.Health{failing.Record.ID: health(agent.HealthHealthy, at)})
	wantNames(t, "recovered, search weather", mustSearch(t, s, store.SearchQuery{Q: "weather"}).Listings, "beta-weather", "alpha-weather", "sky-helper")
}

// Pages walk across the boundary between the agents that are not failing
// and the failing ones without a gap or a repeat, with and without text.
func testPaginateAcrossFailing(t *testing.T, s store.Store) {
	at := now()
	p := newPublisher(t)
	h := map[string]agent.Health{}
	var ok, bad []string // newest first
	for i := range 12 {
		l := p.listing(t, at, tierRecord(i, i%3, "hp"))
		mustUpsert(t, s, l)
		st := agent.HealthHealthy
		if i%4 == 1 {
			st = agent.HealthFailing
			bad = append([]string{l.Record.Name}, bad...)
		} else {
			ok = append([]string{l.Record.Name}, ok...)
		}
		h[l.Record.ID] = health(st, at)
	}
	mustSetHealth(t, s, p.peer, h)
	failingName := map[string]bool{}
	for _, n := range bad {
		failingName[n] = true
	}
	for _, limit := range []int{1, 2, 5, 9, 12, 13} {
		got := walk(t, s, store.SearchQuery{Limit: limit}, nil)
		if fmt.Sprint(got) != fmt.Sprint(append(append([]string{}, ok...), bad...)) {
			t.Errorf("no text, limit %d: walked %q, want %q then %q", limit, got, ok, bad)
		}
		got = walk(t, s, store.SearchQuery{Q: "common", Limit: limit}, nil)
		wantEachOnce(t, fmt.Sprintf("common, limit %d", limit), got, append(append([]string{}, ok...), bad...), true)
		for i := 1; i < len(got); i++ {
			if failingName[got[i-1]] && !failingName[got[i]] {
				t.Errorf("common, limit %d: %s (not failing) after %s (failing): %q", limit, got[i], got[i-1], got)
				break
			}
		}
	}
}
