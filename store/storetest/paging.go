package storetest

import (
	"encoding/base64"
	"errors"
	"fmt"
	"testing"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

var pagingCases = []testCase{
	{"PaginateNewestFirst", testPaginateNewestFirst},
	{"PaginateByRelevance", testPaginateByRelevance},
	{"PaginateTextNewestFirst", testPaginateTextNewestFirst},
	{"PaginateWhileInsertingNewestFirst", func(t *testing.T, s store.Store) { testPaginateWhileInserting(t, s, "", nil) }},
	{"PaginateWhileInsertingByRelevance", func(t *testing.T, s store.Store) { testPaginateWhileInserting(t, s, "common", nil) }},
	{"PageLimits", testPageLimits},
	{"BadCursor", testBadCursor},
}

// tier is how a generated listing matches "common": 0 in its name, 1 in its
// tags, 2 in its description only. Relevance orders tiers 0, 1, 2.
func tierRecord(i, tier int, prefix string) agent.Record {
	r := agent.Record{Name: fmt.Sprintf("%s-%03d", prefix, i), Description: "plain words"}
	switch tier {
	case 0:
		r.Name = fmt.Sprintf("common-%s-%03d", prefix, i)
	case 1:
		r.Tags = []string{"common"}
	default:
		r.Description = "a common description"
	}
	return r
}

// walk pages through q with the given page size until the last page and
// returns the names in order. between runs after every page.
func walk(t *testing.T, s store.Store, q store.SearchQuery, between func()) []string {
	t.Helper()
	var out []string
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatalf("more than 1000 pages: the cursor does not advance")
		}
		page := mustSearch(t, s, q)
		if len(page.Listings) > q.Limit {
			t.Fatalf("page of %d listings, limit %d", len(page.Listings), q.Limit)
		}
		out = append(out, names(page.Listings)...)
		if page.NextCursor == "" {
			return out
		}
		if len(page.Listings) == 0 {
			t.Fatalf("empty page with a next cursor")
		}
		q.Cursor = page.NextCursor
		if between != nil {
			between()
		}
	}
}

func testPaginateNewestFirst(t *testing.T, s store.Store) {
	at := now()
	p := newPublisher(t)
	const n = 37
	var want []string
	for i := range n {
		l := p.listing(t, at, agent.Record{Name: fmt.Sprintf("agent-%03d", i)})
		mustUpsert(t, s, l)
		want = append([]string{l.Record.Name}, want...)
	}
	for _, limit := range []int{1, 5, 36, 37, 38, 100} {
		got := walk(t, s, store.SearchQuery{Limit: limit}, nil)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("limit %d: walked %q, want %q", limit, got, want)
		}
	}
	// An exact multiple of the page size: the last full page may or may not
	// carry a cursor, but the next page must then be empty and final.
	page := mustSearch(t, s, store.SearchQuery{Limit: n})
	if page.NextCursor != "" {
		if rest := mustSearch(t, s, store.SearchQuery{Limit: n, Cursor: page.NextCursor}); len(rest.Listings) != 0 || rest.NextCursor != "" {
			t.Errorf("page after the last: %d listings, cursor %q", len(rest.Listings), rest.NextCursor)
		}
	}
}

func testPaginateByRelevance(t *testing.T, s store.Store) {
	at := now()
	p := newPublisher(t)
	const n = 30
	tierOf := map[string]int{}
	for i := range n {
		l := p.listing(t, at, tierRecord(i, i%3, "rel"))
		mustUpsert(t, s, l)
		tierOf[l.Record.Name] = i % 3
	}
	// Non-matching listings must not show up.
	mustUpsert(t, s, p.listing(t, at, agent.Record{Name: "not-matching"}))
	for _, limit := range []int{1, 4, 7, 30} {
		got := walk(t, s, store.SearchQuery{Q: "common", Limit: limit}, nil)
		wantEachOnce(t, fmt.Sprintf("limit %d", limit), got, keys(tierOf), true)
		for i := 1; i < len(got); i++ {
			if tierOf[got[i]] < tierOf[got[i-1]] {
				t.Errorf("limit %d: %s (tier %d) after %s (tier %d): name > tags > description expected",
					limit, got[i], tierOf[got[i]], got[i-1], tierOf[got[i-1]])
				break
			}
		}
	}
}

// testPaginateTextNewestFirst: a text search sorted newest first
// (store.SortNewest) walks every match once, newest first whatever its
// relevance, and nothing else.
func testPaginateTextNewestFirst(t *testing.T, s store.Store) {
	at := now()
	p := newPublisher(t)
	var want []string
	for i := range 20 {
		l := p.listing(t, at, tierRecord(i, i%3, "new"))
		mustUpsert(t, s, l)
		want = append([]string{l.Record.Name}, want...)
		if i == 10 {
			mustUpsert(t, s, p.listing(t, at, agent.Record{Name: "not-matching"}))
		}
	}
	for _, limit := range []int{1, 3, 7, 20, 21} {
		// The same search by relevance first: a read cache must not
		// answer the newest-first one with it.
		walk(t, s, store.SearchQuery{Q: "common", Limit: limit}, nil)
		got := walk(t, s, store.SearchQuery{Q: "common", Sort: store.SortNewest, Limit: limit}, nil)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("limit %d: walked %q, want %q", limit, got, want)
		}
	}
}

func keys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// wantEachOnce checks that got has no repeats and holds every name of want;
// with exact, nothing else either.
func wantEachOnce(t *testing.T, what string, got, want []string, exact bool) {
	t.Helper()
	seen := map[string]int{}
	for _, g := range got {
		seen[g]++
		if seen[g] == 2 {
			t.Errorf("%s: %s returned twice", what, g)
		}
	}
	for _, w := range want {
		if seen[w] == 0 {
			t.Errorf("%s: %s missing", what, w)
		}
	}
	if exact && len(seen) != len(want) {
		t.Errorf("%s: %d distinct listings, want %d", what, len(seen), len(want))
	}
}

// testPaginateWhileInserting pages with a small limit while another
// goroutine inserts listings (that match q too) between pages: every listing
// that existed before the walk appears exactly once, and nothing repeats.
// status, if set, gives the i-th listing of each lot its status.
func testPaginateWhileInserting(t *testing.T, s store.Store, q string, status func(i int) string) {
	at := now()
	p := newPublisher(t)
	const before, during = 25, 40
	var want []string
	for i := range before {
		l := p.listing(t, at, tierRecord(i, i%3, "before"))
		if status != nil {
			l = withStatus(l, status(i))
		}
		mustUpsert(t, s, l)
		want = append(want, l.Record.Name)
	}
	// Seal first: the inserter should only insert.
	extra := make([]store.Listing, during)
	for i := range extra {
		extra[i] = p.listing(t, at, tierRecord(i, i%3, "during"))
		if status != nil {
			extra[i] = withStatus(extra[i], status(i))
		}
	}

	ctx := testContext(t)
	inserted := make(chan struct{})
	done := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		defer close(inserted)
		for _, l := range extra {
			if err := s.UpsertRecord(ctx, l); err != nil {
				errc <- err
				return
			}
			select {
			case inserted <- struct{}{}:
			case <-done:
				return
			}
		}
	}()
	// After each page, wait for at least one insert (while there are any
	// left), so pages and inserts interleave without sleeping.
	between := func() {
		select {
		case <-inserted:
		case <-ctx.Done():
		}
	}
	got := walk(t, s, store.SearchQuery{Q: q, Limit: 3}, between)
	close(done)
	for range inserted {
	}
	select {
	case err := <-errc:
		t.Fatalf("inserter: %v", err)
	default:
	}
	wantEachOnce(t, "walk while inserting", got, want, false)
}

func testPageLimits(t *testing.T, s store.Store) {
	at := now()
	p := newPublisher(t)
	for i := range store.DefaultLimit + 3 {
		mustUpsert(t, s, p.listing(t, at, agent.Record{Name: fmt.Sprintf("limit-%03d", i)}))
	}
	for _, c := range []struct{ limit, want int }{{0, store.DefaultLimit}, {-5, store.DefaultLimit}, {2, 2}} {
		page := mustSearch(t, s, store.SearchQuery{Limit: c.limit})
		if len(page.Listings) != c.want || page.NextCursor == "" {
			t.Errorf("limit %d: %d listings, cursor %q; want %d and a cursor", c.limit, len(page.Listings), page.NextCursor, c.want)
		}
	}
	page := mustSearch(t, s, store.SearchQuery{Limit: store.MaxLimit + 50})
	if len(page.Listings) != store.DefaultLimit+3 || page.NextCursor != "" {
		t.Errorf("limit above max: %d listings, cursor %q; want all %d, no cursor", len(page.Listings), page.NextCursor, store.DefaultLimit+3)
	}
}

func testBadCursor(t *testing.T, s store.Store) {
	at := now()
	p := newPublisher(t)
	mustUpsert(t, s, p.listing(t, at, agent.Record{Name: "cursor-target", Description: "common"}))
	ctx := testContext(t)
	enc := base64.RawURLEncoding.EncodeToString
	for _, cur := range []string{
		"not a cursor!", "%%%", enc([]byte("{}")), enc([]byte(`{"p":-3}`)), enc([]byte("[1,2]")),
		enc([]byte(`{"p":"x"}`)), string(make([]byte, 300)),
	} {
		for _, q := range []string{"", "common"} {
			_, err := s.SearchAgents(ctx, store.SearchQuery{Q: q, Cursor: cur})
			if !errors.Is(err, store.ErrBadCursor) {
				t.Errorf("SearchAgents(Q %q, cursor %q) = %v, want ErrBadCursor", q, cur, err)
			}
		}
	}
}
