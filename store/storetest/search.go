package storetest

import (
	"strings"
	"testing"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

var searchCases = []testCase{
	{"SearchRanking", testSearchRanking},
	{"SearchPrefixAndAllTerms", testSearchPrefixAndAllTerms},
	{"SearchHostileInput", testSearchHostileInput},
	{"SearchTags", testSearchTags},
	{"SearchStatuses", testSearchStatuses},
	{"SearchOwner", testSearchOwner},
	{"SearchPublishers", testSearchPublishers},
}

// rankingFixture: a name match inserted first (so newest-first order would
// put it last), then description matches.
func rankingFixture(t *testing.T, s store.Store) {
	at := now()
	p := newPublisher(t)
	mustUpsert(t, s,
		p.listing(t, at, agent.Record{Name: "weather-bot", DisplayName: "Weather Bot", Description: "Tells you about the sky.", Tags: []string{"sky"}}),
		p.listing(t, at, agent.Record{Name: "sky-helper", DisplayName: "Sky Helper", Description: "Knows weather and climate facts."}),
		p.listing(t, at, agent.Record{Name: "chef", DisplayName: "Chef", Description: "Cooks a weatherproof soup."}),
		p.listing(t, at, agent.Record{Name: "unrelated", DisplayName: "Unrelated", Description: "Nothing to see."}),
	)
}

func testSearchRanking(t *testing.T, s store.Store) {
	rankingFixture(t, s)
	for _, q := range []string{"weather", "WEATHER", "Weather!"} {
		got := mustSearch(t, s, store.SearchQuery{Q: q}).Listings
		if len(got) != 3 || got[0].Record.Name != "weather-bot" {
			t.Errorf("search %q = %q, want weather-bot first, then sky-helper and chef", q, names(got))
			continue
		}
		wantNameSet(t, "search "+q, got, "weather-bot", "sky-helper", "chef")
	}
	// A name match outranks a tag and description match.
	got := mustSearch(t, s, store.SearchQuery{Q: "sky"}).Listings
	wantNameSet(t, "search sky", got, "weather-bot", "sky-helper")
	if len(got) == 2 && got[0].Record.Name != "sky-helper" {
		t.Errorf("search sky = %q, want sky-helper (name) first", names(got))
	}
}

func testSearchPrefixAndAllTerms(t *testing.T, s store.Store) {
	rankingFixture(t, s)
	for _, c := range []struct {
		q    string
		want []string
	}{
		{"wea", []string{"weather-bot", "sky-helper", "chef"}},
		{"w", []string{"weather-bot", "sky-helper", "chef"}},
		{"weather climate", []string{"sky-helper"}},
		{"climate weather", []string{"sky-helper"}},
		{"clim wea", []string{"sky-helper"}},
		{"weather nothing", nil},
		{"soup", []string{"chef"}},
		{"helper", []string{"sky-helper"}},
		{"zzz", nil},
	} {
		got := mustSearch(t, s, store.SearchQuery{Q: c.q}).Listings
		wantNameSet(t, "search "+c.q, got, c.want...)
	}
}

func testSearchHostileInput(t *testing.T, s store.Store) {
	rankingFixture(t, s)
	ctx := testContext(t)
	// Text that is valid in any SQL text parameter: searched for, and also
	// used as a tag, owner and status filter.
	printable := []string{
		`"a" OR *`, `'; drop table agents; --`, `*`, `"`, `""`, `'`, `-`, `^weather`, `weather*`,
		`NEAR(weather sky)`, `name:weather`, `{name}: weather`, `weather AND`, `OR`, `NOT weather`,
		`(weather`, `weather)`, `%_%`, `\`, `$1`, `?`, `:1`, `@x`, `weather OR 1=1`, `+weather -sky`,
		"ǅemal ⅷ ﬁ straße 東京 🙂", "e\u0301", "\u200b", "a b c d e f g h i j k l m n o p",
		strings.Repeat("weather ", 1000),
	}
	for _, q := range printable {
		for _, sq := range []store.SearchQuery{
			{Q: q},
			{Q: q, Tags: []string{q}},
			{Q: q, Owner: q, Statuses: []string{q}},
			{Tags: []string{q}, Owner: q},
		} {
			if _, err := s.SearchAgents(ctx, sq); err != nil {
				t.Errorf("SearchAgents(%+q) = %v, want no error", q, err)
			}
		}
	}
	// Free text is only ever split into words, so even bytes no SQL text
	// parameter could carry are harmless there.
	for _, q := range []string{"\x00", "a\x00b", "\xff\xfe weather", string(make([]byte, 5000))} {
		if _, err := s.SearchAgents(ctx, store.SearchQuery{Q: q}); err != nil {
			t.Errorf("SearchAgents(Q: %+q) = %v, want no error", q, err)
		}
	}
	// Query syntax is not interpreted: quotes and stars are separators.
	wantNames(t, `search "climate"*`, mustSearch(t, s, store.SearchQuery{Q: `"climate"*`}).Listings, "sky-helper")
	wantNames(t, `search weather OR 1=1`, mustSearch(t, s, store.SearchQuery{Q: `weather OR 1=1`}).Listings)
}

// tagFixture: go+weather, weather, go+rust, inserted in that order.
func tagFixture(t *testing.T, s store.Store) {
	at := now()
	p := newPublisher(t)
	mustUpsert(t, s,
		p.listing(t, at, agent.Record{Name: "go-weather", Description: "common", Tags: []string{"go", "weather"}}),
		p.listing(t, at, agent.Record{Name: "just-weather", Description: "common", Tags: []string{"weather"}}),
		p.listing(t, at, agent.Record{Name: "go-rust", Description: "common", Tags: []string{"go", "rust"}}),
	)
}

func testSearchTags(t *testing.T, s store.Store) {
	tagFixture(t, s)
	for _, c := range []struct {
		q    string
		tags []string
		want []string // newest first without q
	}{
		{"", []string{"weather"}, []string{"just-weather", "go-weather"}},
		{"", []string{"go"}, []string{"go-rust", "go-weather"}},
		{"", []string{"go", "weather"}, []string{"go-weather"}},
		{"", []string{"weather", "go"}, []string{"go-weather"}},
		{"", []string{"go", "go"}, []string{"go-rust", "go-weather"}},
		{"", []string{"go", "rust", "weather"}, nil},
		{"", []string{"nope"}, nil},
		{"", []string{"go", "nope"}, nil},
		{"common", []string{"go"}, []string{"go-rust", "go-weather"}},
		{"common", []string{"go", "weather"}, []string{"go-weather"}},
		{"common", []string{"nope"}, nil},
		{"rust", []string{"go"}, []string{"go-rust"}},
	} {
		got := mustSearch(t, s, store.SearchQuery{Q: c.q, Tags: c.tags}).Listings
		if c.q == "" {
			wantNames(t, "search tags "+join(c.tags), got, c.want...)
		} else {
			wantNameSet(t, "search "+c.q+" tags "+join(c.tags), got, c.want...)
		}
	}
}

func join(xs []string) string {
	out := ""
	for i, x := range xs {
		if i > 0 {
			out += "+"
		}
		out += x
	}
	return out
}

func testSearchStatuses(t *testing.T, s store.Store) {
	at := now()
	p := newPublisher(t)
	mustUpsert(t, s,
		p.listing(t, at, agent.Record{Name: "is-online", Description: "common"}),
		withStatus(p.listing(t, at, agent.Record{Name: "is-stale", Description: "common"}), store.StatusStale),
		withStatus(p.listing(t, at, agent.Record{Name: "is-offline", Description: "common"}), store.StatusOffline),
	)
	for _, c := range []struct {
		statuses []string
		want     []string
	}{
		{nil, []string{"is-stale", "is-online"}},
		{[]string{}, []string{"is-stale", "is-online"}},
		{[]string{store.StatusOnline}, []string{"is-online"}},
		{[]string{store.StatusStale}, []string{"is-stale"}},
		{[]string{store.StatusOffline}, []string{"is-offline"}},
		{[]string{store.StatusOnline, store.StatusOffline}, []string{"is-offline", "is-online"}},
		{[]string{store.StatusOffline, store.StatusStale, store.StatusOnline}, []string{"is-offline", "is-stale", "is-online"}},
		{[]string{"bogus"}, nil},
	} {
		wantNames(t, "statuses "+join(c.statuses), mustSearch(t, s, store.SearchQuery{Statuses: c.statuses}).Listings, c.want...)
		wantNameSet(t, "common, statuses "+join(c.statuses), mustSearch(t, s, store.SearchQuery{Q: "common", Statuses: c.statuses}).Listings, c.want...)
	}
}

func testSearchOwner(t *testing.T, s store.Store) {
	at := now()
	p := newPublisher(t)
	mustUpsert(t, s,
		p.listing(t, at, agent.Record{Name: "alices-first", Description: "common", Owner: "alice", Tags: []string{"x"}}),
		p.listing(t, at, agent.Record{Name: "bobs", Description: "common", Owner: "bob", Tags: []string{"x"}}),
		p.listing(t, at, agent.Record{Name: "nobodys", Description: "common", Tags: []string{"x"}}),
		p.listing(t, at, agent.Record{Name: "alices-second", Description: "common", Owner: "alice"}),
	)
	wantNames(t, "owner alice", mustSearch(t, s, store.SearchQuery{Owner: "alice"}).Listings, "alices-second", "alices-first")
	wantNames(t, "owner bob", mustSearch(t, s, store.SearchQuery{Owner: "bob"}).Listings, "bobs")
	wantNames(t, "owner carol", mustSearch(t, s, store.SearchQuery{Owner: "carol"}).Listings)
	wantNameSet(t, "common, owner alice", mustSearch(t, s, store.SearchQuery{Q: "common", Owner: "alice"}).Listings, "alices-second", "alices-first")
	wantNames(t, "owner alice, tag x", mustSearch(t, s, store.SearchQuery{Owner: "alice", Tags: []string{"x"}}).Listings, "alices-first")
}

// testSearchPublishers: SearchQuery.Publishers keeps only the listings of
// those publishers (the "verified publishers only" filter), with text,
// tags, sorts and the tag facets; an unknown publisher matches nothing.
func testSearchPublishers(t *testing.T, s store.Store) {
	at := now()
	p1, p2, p3 := newPublisher(t), newPublisher(t), newPublisher(t)
	mustUpsert(t, s,
		p1.listing(t, at, agent.Record{Name: "first-one", Description: "common", Tags: []string{"x"}}),
		p2.listing(t, at, agent.Record{Name: "second-one", Description: "common", Tags: []string{"x"}}),
		p3.listing(t, at, agent.Record{Name: "third-one", Description: "common", Tags: []string{"y"}}),
		p1.listing(t, at, agent.Record{Name: "first-two", Description: "other"}),
	)
	id1, id2, id3 := p1.peer, p2.peer, p3.peer
	wantNameSet(t, "publisher 1", mustSearch(t, s, store.SearchQuery{Publishers: []string{id1}}).Listings, "first-one", "first-two")
	wantNameSet(t, "publishers 1, 3", mustSearch(t, s, store.SearchQuery{Publishers: []string{id3, id1}}).Listings, "first-one", "first-two", "third-one")
	wantNameSet(t, "common, publishers 1, 2", mustSearch(t, s, store.SearchQuery{Q: "common", Publishers: []string{id1, id2}}).Listings, "first-one", "second-one")
	wantNameSet(t, "tag x, publisher 2", mustSearch(t, s, store.SearchQuery{Tags: []string{"x"}, Publishers: []string{id2}}).Listings, "second-one")
	wantNames(t, "publisher 1 by name", mustSearch(t, s, store.SearchQuery{Sort: store.SortName, Publishers: []string{id1}}).Listings, "first-one", "first-two")
	wantNames(t, "an unknown publisher", mustSearch(t, s, store.SearchQuery{Publishers: []string{"12D3KooWNobody"}}).Listings)
	wantNameSet(t, "no filter", mustSearch(t, s, store.SearchQuery{}).Listings, "first-one", "first-two", "second-one", "third-one")
	facets, err := s.TagFacets(t.Context(), store.SearchQuery{Publishers: []string{id3}}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(facets) != 1 || facets[0].Tag != "y" || facets[0].Count != 1 {
		t.Errorf("tag facets of publisher 3 = %+v, want y:1", facets)
	}
}
