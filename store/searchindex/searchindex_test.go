package searchindex_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/internal/waitfor"
	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/store/postgres"
	"github.com/agentsite/agentsite/store/postgres/pgtest"
	"github.com/agentsite/agentsite/store/searchindex"
	"github.com/agentsite/agentsite/store/sqlite/sqlitetest"
	"github.com/agentsite/agentsite/store/storetest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// indexed is e behind a loaded index.
func indexed(t testing.TB, e searchindex.Engine) *searchindex.Store {
	t.Helper()
	s := searchindex.New(e, slog.New(slog.DiscardHandler))
	if err := s.Load(t.Context()); err != nil {
		t.Fatalf("Load: %v", err)
	}
	return s
}

// conformance runs the whole store suite with the index in front of open's
// engine, and checks that the index, not the engine, answered the
// searches.
func conformance(t *testing.T, open func(t *testing.T) searchindex.Engine) {
	var (
		mu     sync.Mutex
		stores []*searchindex.Store
	)
	storetest.Run(t, func(t *testing.T) store.Store {
		s := indexed(t, open(t))
		mu.Lock()
		stores = append(stores, s)
		mu.Unlock()
		return s
	})
	var answered, passed uint64
	for _, s := range stores {
		_, a, p := s.Counts()
		answered, passed = answered+a, passed+p
	}
	t.Logf("searches answered by the index: %d, passed to the engine: %d", answered, passed)
	// The engine answers only sorts by name and bad cursors.
	if answered < 200 || passed > answered/4 {
		t.Errorf("the index answered %d searches and passed %d to the engine: it is not in use", answered, passed)
	}
}

func TestConformanceSQLite(t *testing.T) {
	conformance(t, func(t *testing.T) searchindex.Engine { return sqlitetest.Open(t) })
}

func TestConformancePostgres(t *testing.T) {
	conformance(t, func(t *testing.T) searchindex.Engine { return pgtest.Open(t) })
}

// listing is an unsigned listing (the store does not check envelopes).
func listing(name, description string, seq uint64) store.Listing {
	at := time.Now().UTC().Truncate(time.Microsecond)
	return store.Listing{
		Record: agent.Record{
			ID: "id-" + name, Name: name, DisplayName: name, Description: description,
			Publisher: "pub", Seq: seq, Version: "1",
			IssuedAt: at.Add(-time.Minute), ExpiresAt: at.Add(time.Hour),
		},
		Envelope: []byte(`{}`), Status: store.StatusOnline, LastSeen: at, UpdatedAt: at,
		HostPeerID: "host-" + name,
	}
}

func upsert(t testing.TB, s store.Catalogue, ls ...store.Listing) {
	t.Helper()
	for _, l := range ls {
		if err := s.UpsertRecord(t.Context(), l); err != nil {
			t.Fatalf("UpsertRecord(%s): %v", l.Record.Name, err)
		}
	}
}

func search(t testing.TB, s store.Catalogue, q string) []string {
	t.Helper()
	page, err := s.SearchAgents(t.Context(), store.SearchQuery{Q: q})
	if err != nil {
		t.Fatalf("SearchAgents(%q): %v", q, err)
	}
	var out []string
	for _, l := range page.Listings {
		out = append(out, l.Record.Name)
	}
	return out
}

// eventually waits until search returns want, saying what it returned
// last if it never does.
func eventually(t testing.TB, s store.Catalogue, q string, want ...string) {
	t.Helper()
	var got []string
	defer func() {
		if t.Failed() {
			t.Logf("search %q last returned %v", q, got)
		}
	}()
	waitfor.Until(t, 10*time.Second, fmt.Sprintf("search %q to return %v", q, want), func() bool {
		got = search(t, s, q)
		return slices.Equal(got, want)
	})
}

// TestReplicas: two processes' stores on one Postgres database, each with
// its own index: what one writes, the other's searches find within its
// poll interval, changed and removed too.
func TestReplicas(t *testing.T) {
	u := pgtest.NewDatabase(t)
	open := func() *searchindex.Store {
		db, err := postgres.Open(t.Context(), u, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		t.Cleanup(func() { db.Close() })
		s := indexed(t, db)
		s.PollEvery = 50 * time.Millisecond
		return s
	}
	a, b := open(), open()
	upsert(t, a, listing("weather-oracle", "forecasts for any city", 1))
	if got := search(t, a, "forec"); !slices.Equal(got, []string{"weather-oracle"}) {
		t.Fatalf("the writer's own search: %v", got)
	}
	eventually(t, b, "forec", "weather-oracle")
	upsert(t, a, listing("weather-oracle", "tides and currents", 2))
	eventually(t, b, "forec")
	eventually(t, b, "tides", "weather-oracle")
	tomb := listing("weather-oracle", "", 3)
	tomb.Record.Tombstone = true
	upsert(t, a, tomb)
	eventually(t, b, "weather")
	if _, answered, _ := b.Counts(); answered == 0 {
		t.Fatal("the index answered none of the searches")
	}
}

// TestLateCommit: on Postgres a change number is taken when a row is
// written and seen when its transaction commits; a transaction that
// commits after a later one must still reach the index.
func TestLateCommit(t *testing.T) {
	db := pgtest.Open(t)
	s := indexed(t, db)
	s.PollEvery = time.Hour // only this process's writes make it catch up
	written, commit := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- db.InBatch(t.Context(), func(ctx context.Context, tx store.Tx) error {
			if err := tx.UpsertRecord(ctx, listing("slow-writer", "late commit", 1)); err != nil {
				return err
			}
			close(written)
			<-commit
			return nil
		})
	}()
	<-written
	upsert(t, s, listing("fast-writer", "early commit", 1))
	if got := search(t, s, "commit"); !slices.Equal(got, []string{"fast-writer"}) {
		t.Fatalf("before the slow commit: %v", got)
	}
	close(commit)
	if err := <-done; err != nil {
		t.Fatalf("slow batch: %v", err)
	}
	upsert(t, s, listing("third", "unrelated", 1)) // makes the next search catch up
	if got := search(t, s, "commit"); !slices.Equal(got, []string{"fast-writer", "slow-writer"}) {
		t.Fatalf("after the slow commit: %v, want both (newest first)", got)
	}
}

// TestChangedBehindTheIndex: a listing that changed after the index last
// caught up is not shown as the index remembers it: the page's rows are
// checked against their change numbers, and the index catches up and
// looks again.
func TestChangedBehindTheIndex(t *testing.T) {
	for name, open := range map[string]func(t *testing.T) searchindex.Engine{
		"sqlite":   func(t *testing.T) searchindex.Engine { return sqlitetest.Open(t) },
		"postgres": func(t *testing.T) searchindex.Engine { return pgtest.Open(t) },
	} {
		t.Run(name, func(t *testing.T) {
			e := open(t)
			s := indexed(t, e)
			s.PollEvery = time.Hour
			s.RowTTL = 0 // else the row cache serves alpha as read for its TTL, as the read cache would
			l := listing("alpha", "first of all", 1)
			upsert(t, s, l, listing("beta", "first again", 1))
			if got := search(t, s, "first"); !slices.Equal(got, []string{"beta", "alpha"}) {
				t.Fatalf("before: %v", got)
			}
			// Behind the index's back: the engine directly.
			if _, err := e.SetHostStatus(t.Context(), l.HostPeerID, store.StatusOffline, time.Now()); err != nil {
				t.Fatal(err)
			}
			if got := search(t, s, "first"); !slices.Equal(got, []string{"beta"}) {
				t.Fatalf("after alpha went offline: %v, want [beta]", got)
			}
			_, answered, passed := s.Counts()
			if answered != 2 || passed != 0 {
				t.Fatalf("answered %d, passed %d; want the index to answer both", answered, passed)
			}
		})
	}
}

// TestLoadsExisting: an index opened on a database with listings in it
// (a restart, an import into a stopped node) holds them all.
func TestLoadsExisting(t *testing.T) {
	e := sqlitetest.Open(t)
	for i := range 7_001 { // more than one batch of the load
		if err := e.UpsertRecord(t.Context(), listing(fmt.Sprintf("agent-%05d", i), "bulk", 1)); err != nil {
			t.Fatal(err)
		}
	}
	s := indexed(t, e)
	if n, _, _ := s.Counts(); n != 7_001 {
		t.Fatalf("index holds %d listings, want 7001", n)
	}
	if got := search(t, s, "agent 07000"); !slices.Equal(got, []string{"agent-07000"}) {
		t.Fatalf("search: %v", got)
	}
	// A word in every listing (a bitmap) and one in a single listing (a
	// slice) leave with a changed text.
	upsert(t, s, listing("agent-07000", "solo", 2), listing("agent-00001", "solo", 2))
	if got := search(t, s, "bulk 07000"); len(got) != 0 {
		t.Fatalf("search for the old text: %v", got)
	}
	if got := search(t, s, "07000"); !slices.Equal(got, []string{"agent-07000"}) {
		t.Fatalf("search by name after the change: %v", got)
	}
	if got := search(t, s, "solo"); !slices.Equal(got, []string{"agent-07000", "agent-00001"}) {
		t.Fatalf("search for the new text: %v", got)
	}
	upsert(t, s, listing("agent-00001", "bulk", 3))
	if got := search(t, s, "solo"); !slices.Equal(got, []string{"agent-07000"}) {
		t.Fatalf("search after changing back: %v", got)
	}
}

// BenchmarkIndexed runs the shared store benchmarks with the index in
// front of each engine:
//
//	go test -run XXX -bench . -benchtime 200x ./store/searchindex/
func BenchmarkIndexed(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) {
		storetest.Benchmarks(b, func(b *testing.B) store.Store { return indexed(b, sqlitetest.Open(b)) })
	})
	b.Run("postgres", func(b *testing.B) {
		storetest.Benchmarks(b, func(b *testing.B) store.Store { return indexed(b, pgtest.Open(b)) })
	})
}

// counting counts the engine's page reads.
type counting struct {
	searchindex.Engine
	reads atomic.Int64
}

func (c *counting) ListingsAt(ctx context.Context, pos []int64, publicOnly bool) ([]store.PosListing, error) {
	c.reads.Add(int64(len(pos)))
	return c.Engine.ListingsAt(ctx, pos, publicOnly)
}

// TestRowCache: a page's listings read once serve the next pages that
// show them, until this process writes, their change number moves, or
// their time is up; a search that needs whole listings does not get the
// public part a PublicOnly search read.
func TestRowCache(t *testing.T) {
	e := &counting{Engine: sqlitetest.Open(t)}
	s := indexed(t, e)
	s.PollEvery, s.RowTTL = time.Hour, time.Hour
	upsert(t, s, listing("alpha", "shared words", 1), listing("beta", "shared words", 1))
	reads := func(q store.SearchQuery) int64 {
		t.Helper()
		before := e.reads.Load()
		page, err := s.SearchAgents(t.Context(), q)
		if err != nil || len(page.Listings) == 0 {
			t.Fatalf("search %+v: %d listings, %v", q, len(page.Listings), err)
		}
		return e.reads.Load() - before
	}
	pub := store.SearchQuery{Q: "shared", PublicOnly: true}
	if n := reads(pub); n != 2 {
		t.Fatalf("first search read %d listings, want 2", n)
	}
	if n := reads(store.SearchQuery{Q: "words", PublicOnly: true}); n != 0 {
		t.Fatalf("a second search over the same listings read %d, want 0 (cached)", n)
	}
	if n := reads(store.SearchQuery{Q: "shared"}); n != 2 {
		t.Fatalf("a search for whole listings read %d, want 2 (the cache held public parts)", n)
	}
	if n := reads(pub); n != 0 {
		t.Fatalf("after the whole listings were read: %d reads, want 0", n)
	}
	// A write of this process empties it: a health latency moves no
	// change number.
	if _, err := s.SetHealth(t.Context(), "host-alpha", map[string]agent.Health{"id-alpha": {State: agent.HealthHealthy, LatencyMS: 7}}); err != nil {
		t.Fatal(err)
	}
	s.RowTTL = time.Nanosecond // what is read from now on is cached for 1ns
	if n := reads(pub); n != 2 {
		t.Fatalf("after a write: %d reads, want 2", n)
	}
	if n := reads(pub); n != 2 {
		t.Fatalf("past the TTL: %d reads, want 2", n)
	}
}
