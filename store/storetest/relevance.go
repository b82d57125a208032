package storetest

import (
	"bytes"
	"slices"
	"testing"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

var relevanceCases = []testCase{
	{"RelevanceSet", testRelevanceSet},
	{"SearchPublicJSON", testSearchPublicJSON},
}

// relevanceFixture is a small catalogue where newest first is the wrong
// answer: the best match of each query is inserted first, weaker ones
// after it.
func relevanceFixture(t *testing.T, s store.Store) {
	at := now()
	p := newPublisher(t)
	mustUpsert(t, s,
		p.listing(t, at, agent.Record{Name: "weather-station", DisplayName: "Weather Station", Description: "Forecasts for any city.", Tags: []string{"forecast"}}),
		p.listing(t, at, agent.Record{Name: "code-review-bot", DisplayName: "Code Review Bot", Description: "Comments on pull requests.", Tags: []string{"developer-tools"}}),
		p.listing(t, at, agent.Record{Name: "spanish-translator", DisplayName: "Spanish Translator", Description: "Turns English into Spanish.", Tags: []string{"language"}}),
		p.listing(t, at, agent.Record{Name: "sky-watch", DisplayName: "Sky Watch", Description: "Looks up.", Tags: []string{"weather", "alerts"}}),
		p.listing(t, at, agent.Record{Name: "lint-desk", DisplayName: "Lint Desk", Description: "Static analysis.", Tags: []string{"code", "review"}}),
		p.listing(t, at, agent.Record{Name: "polyglot", DisplayName: "Polyglot", Description: "A translator for forty languages, Spanish included.", Tags: []string{"language"}}),
		p.listing(t, at, agent.Record{Name: "trip-planner", DisplayName: "Trip Planner", Description: "Plans trips around the weather and reviews code of conduct.", Tags: []string{"travel"}}),
		p.listing(t, at, agent.Record{Name: "umbrella", DisplayName: "Umbrella", Description: "Rain or shine.",
			Skills: []agent.Skill{{ID: "w", Name: "Weather check", Description: "Looks at the weather."}}}),
		p.listing(t, at, agent.Record{Name: "pair-programmer", DisplayName: "Pair Programmer", Description: "Does code review while you type.", Tags: []string{"developer-tools"}}),
	)
}

// testRelevanceSet: queries and the listings that must come first, in
// order; the rest of the matches follow in any order. Every engine runs
// it, so ranking quality is pinned whatever the engine does to be fast:
// a match of every term in the name or display name comes before one in
// the tags, which comes before one in the description or skills.
func testRelevanceSet(t *testing.T, s store.Store) {
	relevanceFixture(t, s)
	for _, c := range []struct {
		q     string
		first []string // in this order
		rest  []string // after them, any order
	}{
		{"weather", []string{"weather-station", "sky-watch"}, []string{"trip-planner", "umbrella"}},
		{"Weather", []string{"weather-station", "sky-watch"}, []string{"trip-planner", "umbrella"}},
		{"wea", []string{"weather-station", "sky-watch"}, []string{"trip-planner", "umbrella"}},
		{"code review", []string{"code-review-bot", "lint-desk"}, []string{"pair-programmer", "trip-planner"}},
		{"review code", []string{"code-review-bot", "lint-desk"}, []string{"pair-programmer", "trip-planner"}},
		{"spanish translator", []string{"spanish-translator"}, []string{"polyglot"}},
		{"translator", []string{"spanish-translator"}, []string{"polyglot"}},
		{"forecast", []string{"weather-station"}, nil},
		{"sky", []string{"sky-watch"}, nil},
		{"alerts", []string{"sky-watch"}, nil},
		{"rain", []string{"umbrella"}, nil},
	} {
		for _, limit := range []int{0, 1} { // one page, and page by page
			got := collectAll(t, s, store.SearchQuery{Q: c.q, Limit: limit})
			n := len(c.first)
			if len(got) != n+len(c.rest) || !slices.Equal(got[:n], c.first) || !slices.Equal(sorted(got[n:]), sorted(c.rest)) {
				t.Errorf("search %q (limit %d) = %q, want %q first, then %q", c.q, limit, got, c.first, c.rest)
			}
		}
	}
	// A failing agent comes after every other match, however good its own.
	l := mustSearch(t, s, store.SearchQuery{Q: "weather station"}).Listings
	if len(l) != 1 {
		t.Fatalf("search weather station = %q", names(l))
	}
	mustSetHealth(t, s, l[0].HostPeerID, map[string]agent.Health{l[0].Record.ID: health(agent.HealthFailing, now())})
	got := collectAll(t, s, store.SearchQuery{Q: "weather"})
	if len(got) != 4 || got[0] != "sky-watch" || got[3] != "weather-station" {
		t.Errorf("search weather with weather-station failing = %q, want sky-watch first and weather-station last", got)
	}
}

// collectAll pages through a search and returns the names in page order.
func collectAll(t *testing.T, s store.Store, q store.SearchQuery) []string {
	t.Helper()
	var out []string
	for range 50 {
		page := mustSearch(t, s, q)
		out = append(out, names(page.Listings)...)
		if page.NextCursor == "" {
			return out
		}
		q.Cursor = page.NextCursor
	}
	t.Fatalf("search %q: more than 50 pages", q.Q)
	return nil
}

// testSearchPublicJSON: a search gives each listing's public JSON
// (store.PublicRecordJSON of the stored record), and a PublicOnly search
// gives the same JSON and node fields in the same order.
func testSearchPublicJSON(t *testing.T, s store.Store) {
	relevanceFixture(t, s)
	for _, q := range []store.SearchQuery{{}, {Q: "weather"}, {Q: "code review", Limit: 2}} {
		full := mustSearch(t, s, q)
		q.PublicOnly = true
		public := mustSearch(t, s, q)
		if !slices.Equal(names(full.Listings), names(public.Listings)) {
			t.Fatalf("search %q: PublicOnly gave %q, the full search %q", q.Q, names(public.Listings), names(full.Listings))
		}
		if public.NextCursor != full.NextCursor {
			t.Errorf("search %q: PublicOnly cursor %q, full %q", q.Q, public.NextCursor, full.NextCursor)
		}
		for i, l := range full.Listings {
			stored := mustGet(t, s, l.Record.ID)
			want, err := store.PublicRecordJSON(&stored.Record)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(l.PublicJSON, want) {
				t.Errorf("search %q: %s public JSON\n got %s\nwant %s", q.Q, l.Record.Name, l.PublicJSON, want)
			}
			p := public.Listings[i]
			if p.Record.ID != l.Record.ID || !bytes.Equal(p.PublicJSON, want) {
				t.Errorf("search %q PublicOnly #%d: %s %s, want %s %s", q.Q, i, p.Record.ID, p.PublicJSON, l.Record.ID, want)
			}
			if p.Status != l.Status || !p.LastSeen.Equal(l.LastSeen) || p.HostPeerID != l.HostPeerID || p.Local != l.Local || p.Health.State != l.Health.State {
				t.Errorf("search %q PublicOnly #%d: node fields %+v, want those of %+v", q.Q, i, p, l)
			}
		}
	}
}
