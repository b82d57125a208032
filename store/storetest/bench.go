package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

// BenchSizes are the catalogue sizes Benchmarks seeds: a busy mirror today,
// and the scale docs/architecture.md's "planet-wide" asks the default SQLite engine to
// handle.
var BenchSizes = []int{10_000, 100_000}

// Benchmarks measures the portal's hot reads on a seeded catalogue, once per
// size in BenchSizes. open must return a fresh, empty, migrated store that
// lives until b ends; it is called once per size and the seeded store is
// shared by that size's sub-benchmarks:
//
//	SearchText    a free-text query (rotating: a common word, a two-word AND, a short prefix)
//	SearchDistinct a free-text query never asked before in the run (distinctQueries),
//	              as agentsite-load's distinct mix sends: no cache helps
//	SearchTag     one tag, first page
//	SearchNoQuery the default listing, page 2 (through the cursor of page 1)
//	GetByID       one listing by id
//	ListTags      the overview's tag cloud
//	Stats         the overview's counters
func Benchmarks(b *testing.B, open func(b *testing.B) store.Store) {
	for _, size := range BenchSizes {
		b.Run(fmt.Sprintf("listings=%d", size), func(b *testing.B) {
			s := open(b)
			ls := benchListings(b, size)
			start := time.Now()
			seedStore(b, s, ls)
			b.Logf("seeded %d listings in %v", size, time.Since(start).Round(time.Millisecond))
			runBenchmarks(b, s, ls)
		})
	}
}

func runBenchmarks(b *testing.B, s store.Store, ls []store.Listing) {
	ctx := b.Context()
	search := func(b *testing.B, q store.SearchQuery) {
		b.Helper()
		page, err := s.SearchAgents(ctx, q)
		if err != nil {
			b.Fatalf("SearchAgents(%+v): %v", q, err)
		}
		if len(page.Listings) == 0 {
			b.Fatalf("SearchAgents(%+v): no results; the benchmark would measure nothing", q)
		}
	}
	b.Run("SearchText", func(b *testing.B) {
		queries := []string{"weather", "travel guide", "fin"}
		i := 0
		for b.Loop() {
			search(b, store.SearchQuery{Q: queries[i%len(queries)], Limit: store.DefaultLimit})
			i++
		}
	})
	b.Run("SearchDistinct", func(b *testing.B) {
		queries := distinctQueries(ls)
		i := 0
		for b.Loop() {
			// Some pairs match nothing: an empty page is a valid answer here.
			if _, err := s.SearchAgents(ctx, store.SearchQuery{Q: queries[i%len(queries)], Limit: store.DefaultLimit}); err != nil {
				b.Fatalf("SearchAgents(%q): %v", queries[i%len(queries)], err)
			}
			i++
		}
	})
	b.Run("SearchTag", func(b *testing.B) {
		for b.Loop() {
			search(b, store.SearchQuery{Tags: []string{"weather"}, Limit: store.DefaultLimit})
		}
	})
	b.Run("SearchNoQuery", func(b *testing.B) {
		first, err := s.SearchAgents(ctx, store.SearchQuery{Limit: store.DefaultLimit})
		if err != nil || first.NextCursor == "" {
			b.Fatalf("first page: cursor %q, %v", first.NextCursor, err)
		}
		for b.Loop() {
			search(b, store.SearchQuery{Limit: store.DefaultLimit, Cursor: first.NextCursor})
		}
	})
	b.Run("GetByID", func(b *testing.B) {
		rng := rand.New(rand.NewPCG(1, 2))
		for b.Loop() {
			id := ls[rng.IntN(len(ls))].Record.ID
			if _, err := s.GetAgent(ctx, id); err != nil {
				b.Fatalf("GetAgent: %v", err)
			}
		}
	})
	b.Run("ListTags", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.ListTags(ctx, 50); err != nil {
				b.Fatalf("ListTags: %v", err)
			}
		}
	})
	b.Run("Stats", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Stats(ctx); err != nil {
				b.Fatalf("Stats: %v", err)
			}
		}
	})
}

// seedStore upserts ls with a few concurrent writers, as the network does.
func seedStore(b *testing.B, s store.Store, ls []store.Listing) {
	b.Helper()
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	work := make(chan store.Listing, 256)
	var (
		wg      sync.WaitGroup
		errOnce sync.Once
		seedErr error
	)
	for range 8 {
		wg.Go(func() {
			for l := range work {
				if err := s.UpsertRecord(ctx, l); err != nil {
					errOnce.Do(func() { seedErr = err; cancel() })
				}
			}
		})
	}
	for _, l := range ls {
		select {
		case work <- l:
		case <-ctx.Done():
		}
	}
	close(work)
	wg.Wait()
	if seedErr != nil {
		b.Fatalf("seed: %v", seedErr)
	}
}

// sealed caches the signed benchmark listings across sizes and engines of
// one test binary: signing 100k records is the slow part of seeding.
var sealed struct {
	sync.Mutex
	ls []store.Listing
}

// benchListings returns n realistic signed listings (the same ones on every
// call): 64 publishers, tags drawn from a skewed topic distribution, a few
// sentences of description, one skill, most online, some stale or offline.
func benchListings(b *testing.B, n int) []store.Listing {
	b.Helper()
	sealed.Lock()
	defer sealed.Unlock()
	if len(sealed.ls) >= n {
		return sealed.ls[:n]
	}
	start := time.Now()
	from := len(sealed.ls)
	pubs := make([]*publisher, 64)
	for i := range pubs {
		pubs[i] = newPublisher(b)
	}
	at := now()
	out := make([]store.Listing, n-from)
	errs := make([]error, len(out))
	var wg sync.WaitGroup
	workers := runtime.GOMAXPROCS(0)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(out); i += workers {
				idx := from + i
				rec, env, err := pubs[idx%len(pubs)].trySeal(at, benchRecord(idx))
				if err != nil {
					errs[i] = err
					return
				}
				l := newListing(rec, env, at)
				switch idx % 10 {
				case 7:
					l.Status = store.StatusStale
				case 8:
					l.Status = store.StatusOffline
				}
				out[i] = l
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		b.Fatalf("seal benchmark listings: %v", err)
	}
	sealed.ls = append(sealed.ls, out...)
	b.Logf("sealed %d listings in %v", len(out), time.Since(start).Round(time.Millisecond))
	return sealed.ls[:n]
}

// benchTopics are tags; the first ones are much more common (Zipf-like).
var benchTopics = []string{
	"weather", "finance", "travel", "code", "health", "music", "news", "sports", "food", "science",
	"legal", "math", "translation", "images", "video", "gaming", "shopping", "education", "history", "art",
	"crypto", "devops", "security", "data", "writing", "research", "maps", "jobs", "fitness", "pets",
	"movies", "books", "cars", "energy", "space", "biology", "chemistry", "physics", "poetry", "support",
}

var benchWords = strings.Fields(`agent answers questions about the world quickly and politely using
	fresh data from trusted sources it can summarize compare explain plan translate forecast search
	recommend schedule remind calculate convert draft review check monitor report alert track analyze
	daily weekly hourly local global city country market price trend risk guide tips facts stories
	friendly fast accurate private open free simple smart helpful tiny large model tool service api
	chat voice text image table chart list note calendar email document spreadsheet code snippet bug`)

func benchRecord(i int) agent.Record {
	rng := rand.New(rand.NewPCG(uint64(i), 42))
	topic := func() string { return benchTopics[min(int(rng.ExpFloat64()*8), len(benchTopics)-1)] }
	tags := []string{topic()}
	for range rng.IntN(3) {
		if t := topic(); !contains(tags, t) {
			tags = append(tags, t)
		}
	}
	noun := benchWords[rng.IntN(len(benchWords))]
	var desc strings.Builder
	desc.WriteString("This " + tags[0] + " agent")
	for range 12 + rng.IntN(20) {
		desc.WriteString(" " + benchWords[rng.IntN(len(benchWords))])
	}
	desc.WriteString(".")
	return agent.Record{
		Name:        fmt.Sprintf("%s-%s-%d", tags[0], noun, i),
		DisplayName: fmt.Sprintf("%s %s %d", strings.ToUpper(tags[0][:1])+tags[0][1:], noun, i),
		Description: desc.String(),
		Tags:        tags,
		Skills: []agent.Skill{{ID: noun, Name: strings.ToUpper(noun[:1]) + noun[1:],
			Description: "Does " + noun + " things for " + tags[0] + ".", Examples: []string{"Please " + noun + " this."}}},
		Owner: []string{"", "", "", "alice", "bob"}[i%5],
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// distinctQueries is the vocabulary of ls as distinct search-box queries,
// in a fixed random order: every word of three letters or more once on its
// own, then two-word queries whose words occur together in one listing,
// no two the same set of words (as cmd/agentsite-load's distinct mix).
func distinctQueries(ls []store.Listing) []string {
	rng := rand.New(rand.NewPCG(7, 42))
	words := func(l store.Listing) []string {
		r := l.Record
		text := strings.ToLower(r.Name + " " + r.DisplayName + " " + r.Description + " " + strings.Join(r.Tags, " "))
		var out []string
		for _, f := range strings.FieldsFunc(text, func(c rune) bool { return c < 'a' || c > 'z' }) {
			if len(f) >= 3 && f != "the" && f != "and" && f != "this" && f != "agent" && !contains(out, f) {
				out = append(out, f)
			}
		}
		return out
	}
	var out []string
	seen := map[string]bool{}
	for _, l := range ls {
		for _, w := range words(l) {
			if !seen[w] {
				seen[w] = true
				out = append(out, w)
			}
		}
	}
	for tries := 0; len(out) < 5000 && tries < 100_000; tries++ {
		ws := words(ls[rng.IntN(len(ls))])
		if len(ws) < 2 {
			continue
		}
		a, c := ws[rng.IntN(len(ws))], ws[rng.IntN(len(ws))]
		if key := min(a, c) + " " + max(a, c); a != c && !seen[key] {
			seen[key] = true
			out = append(out, a+" "+c)
		}
	}
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}
