package searchindex

import (
	"slices"
	"testing"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

// pageOf is the positions of the listings of one page of q from ix, in
// page order, with their tiers.
func pageOf(ix *index, q string) (pos []int64, ranks []float64) {
	hits, _ := ix.page(store.SearchQuery{Q: q}, store.Cursor{}, false, 100)
	for _, h := range hits {
		pos, ranks = append(pos, h.pos), append(ranks, h.rank)
	}
	return pos, ranks
}

// TestSharedPostings: a word in the same listings in several fields has
// one posting they share, split when a listing has the word in fewer
// fields, and the fields stay right as listings come and go.
func TestSharedPostings(t *testing.T) {
	ix := newIndex()
	doc := func(pos, seq int64, name, desc string, tomb bool) store.IndexDoc {
		return store.IndexDoc{Pos: pos, ChangeSeq: seq, Name: name, Description: desc, Status: store.StatusOnline, Health: "unknown", Tombstone: tomb}
	}
	want := func(q string, wantPos []int64, wantRanks []float64) {
		t.Helper()
		pos, ranks := pageOf(ix, q)
		if !slices.Equal(pos, wantPos) || !slices.Equal(ranks, wantRanks) {
			t.Fatalf("search %q: pos %v ranks %v, want %v %v", q, pos, ranks, wantPos, wantRanks)
		}
	}
	ix.apply([]store.IndexDoc{doc(1, 1, "alpha", "", false)})
	id, _ := ix.lookup("alpha")
	if p := ix.post[title][id]; p == 0 || p != ix.post[head][id] || p != ix.post[all][id] {
		t.Fatal("a word of one listing's name: not one posting for its three fields")
	}
	ix.apply([]store.IndexDoc{doc(2, 2, "beta", "alpha", false)})
	if ix.post[all][id] == ix.post[title][id] {
		t.Fatal("the word is now in a description too, and all still shares the title's posting")
	}
	want("alpha", []int64{1, 2}, []float64{1, 3})
	ix.apply([]store.IndexDoc{doc(3, 3, "alpha", "", false)}) // in every field of 1 and 3, in all of 2
	want("alpha", []int64{3, 1, 2}, []float64{1, 1, 3})
	ix.apply([]store.IndexDoc{doc(1, 4, "", "", true), doc(3, 5, "gamma", "", false)})
	want("alpha", []int64{2}, []float64{3})
	if ix.post[title][id] != 0 || ix.post[head][id] != 0 {
		t.Fatal("title and head postings of a word no title holds any more are kept")
	}
	ix.apply([]store.IndexDoc{doc(2, 6, "beta", "", false)})
	want("alpha", nil, nil)
	if ix.post[all][id] != 0 {
		t.Fatal("an empty posting is kept")
	}
	// Many listings: the posting turns into a bitmap and back to empty.
	var docs []store.IndexDoc
	for i := range int64(2 * smallMax) {
		docs = append(docs, doc(10+i, 10+i, "delta", "", false))
	}
	ix.apply(docs)
	delta, _ := ix.lookup("delta")
	if r := ix.post[all][delta]; r == 0 || r&inline != 0 || ix.pl.at(r).big == nil || ix.pl.len(r) != 2*smallMax {
		t.Fatalf("posting of %d listings: %v", 2*smallMax, r)
	}
	if pos, _ := pageOf(ix, "delt"); len(pos) != 2*smallMax || pos[0] != 10+2*smallMax-1 {
		t.Fatalf("prefix search over a bitmap: %v", pos)
	}
}

// The row cache holds at most maxRowBytes of listings, and its count of
// bytes stays true when a row is replaced.
func TestRowCacheBytes(t *testing.T) {
	c := rowCache{rows: map[int64]cachedRow{}}
	row := func(n int) cachedRow {
		return cachedRow{l: &store.Listing{PublicJSON: make([]byte, n)}}
	}
	one := store.ListingSize(&store.Listing{PublicJSON: make([]byte, 4000)})
	for p := range int64(2 * maxRowBytes / one) {
		c.put(p, row(4000))
		if c.bytes > maxRowBytes || len(c.rows) == 0 {
			t.Fatalf("after %d puts: %d rows, %d bytes (bound %d)", p+1, len(c.rows), c.bytes, maxRowBytes)
		}
	}
	c.rows, c.bytes = map[int64]cachedRow{}, 0
	c.put(1, row(4000))
	c.put(1, row(100))
	if want := store.ListingSize(&store.Listing{PublicJSON: make([]byte, 100)}); c.bytes != want || len(c.rows) != 1 {
		t.Fatalf("after replacing a row: %d rows, %d bytes, want 1 row, %d bytes", len(c.rows), c.bytes, want)
	}
}

// countMatches counts the set found makes (tagCounts counts its tags),
// for text or none and either health pass or both.
func TestCountMatchesIsFound(t *testing.T) {
	ix := newIndex()
	var docs []store.IndexDoc
	for i := range int64(300) {
		d := store.IndexDoc{Pos: i + 1, ChangeSeq: i + 1, Name: "agent", Status: store.StatusOnline, Health: agent.HealthHealthy}
		if i%3 == 0 {
			d.Description = "weather forecast"
		}
		if i%5 == 0 {
			d.Health = agent.HealthFailing
		}
		if i%7 == 0 {
			d.Status = store.StatusStale
		}
		if i%11 == 0 {
			d.Status = store.StatusOffline
		}
		docs = append(docs, d)
	}
	ix.apply(docs)
	for _, q := range []store.SearchQuery{
		{}, {Q: "weather"}, {Q: "weath forec"}, {Q: "agent"}, {Q: "nothing"},
		{Health: []string{agent.HealthFailing}}, {Q: "weather", Health: []string{agent.HealthFailing}},
		{Q: "weather", Health: []string{agent.HealthHealthy}}, {Statuses: []string{store.StatusOffline}},
	} {
		got, want := ix.countMatches(q), int(ix.found(q).GetCardinality())
		if got != want || (q.Q == "weather" && len(q.Health) == 0 && got == 0) {
			t.Errorf("countMatches(%+v) = %d, found has %d", q, got, want)
		}
		// A page of a text search counts its matches as well, the same.
		for _, limit := range []int{1, 100} {
			if _, n := ix.page(q, store.Cursor{}, false, limit); (n >= 0) != (q.Q != "") || n >= 0 && n != want {
				t.Errorf("page(%+v, limit %d) counted %d matches, found has %d", q, limit, n, want)
			}
		}
	}
}
