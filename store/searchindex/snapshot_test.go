package searchindex_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsite/agentsite/internal/waitfor"
	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/store/postgres/pgtest"
	"github.com/agentsite/agentsite/store/searchindex"
	"github.com/agentsite/agentsite/store/sqlite/sqlitetest"
	"github.com/agentsite/agentsite/store/storetest"
)

// feedReads counts the rows the engine's change feed returned, and can
// hide its tombstones (as if their rows had been pruned).
type feedReads struct {
	searchindex.Engine
	rows       atomic.Int64
	hideTombs  atomic.Bool
	afterAsked sync.Map // after → true
}

func (f *feedReads) ListingChanges(ctx context.Context, after int64, also []int64, limit int) ([]store.IndexDoc, error) {
	docs, err := f.Engine.ListingChanges(ctx, after, also, limit)
	if f.hideTombs.Load() {
		docs = slices.DeleteFunc(docs, func(d store.IndexDoc) bool { return d.Tombstone })
	}
	f.rows.Add(int64(len(docs)))
	f.afterAsked.Store(after, true)
	return docs, err
}

// snapshotted is an index over e loaded from the feed, with its snapshot
// written to path.
func snapshotted(t *testing.T, e searchindex.Engine, path string) *searchindex.Store {
	t.Helper()
	s := searchindex.New(e, slog.New(slog.DiscardHandler))
	s.SnapshotPath = path
	if err := s.Load(t.Context()); err != nil {
		t.Fatalf("Load: %v", err)
	}
	s.Save()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("no snapshot written: %v", err)
	}
	return s
}

// restored is an index over e started from the snapshot at path: ok is
// whether the snapshot was used; without it, the index loads from the
// feed, as Run does.
func restored(t *testing.T, e searchindex.Engine, path string) (s *searchindex.Store, ok bool) {
	t.Helper()
	s = searchindex.New(e, slog.New(slog.DiscardHandler))
	s.SnapshotPath = path
	ok, err := s.Restore(t.Context())
	if err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if !ok {
		if err := s.Load(t.Context()); err != nil {
			t.Fatalf("Load: %v", err)
		}
	}
	return s, ok
}

func bulk(t *testing.T, e store.Catalogue, n int) {
	t.Helper()
	for i := range n {
		upsert(t, e, listing(fmt.Sprintf("agent-%04d", i), "bulk common words", 1))
	}
}

// TestSnapshotReadsOnlyLaterChanges: an index started from a snapshot
// reads from the change feed only the changes made after it (a new
// listing, a changed one, a deleted one), and answers as an index loaded
// from the whole feed does.
func TestSnapshotReadsOnlyLaterChanges(t *testing.T) {
	for name, open := range map[string]func(t *testing.T) searchindex.Engine{
		"sqlite":   func(t *testing.T) searchindex.Engine { return sqlitetest.Open(t) },
		"postgres": func(t *testing.T) searchindex.Engine { return pgtest.Open(t) },
	} {
		t.Run(name, func(t *testing.T) {
			e := open(t)
			path := filepath.Join(t.TempDir(), "index.snap")
			bulk(t, e, 300)
			snapshotted(t, e, path)
			// After the snapshot: one new, one changed, one deleted.
			upsert(t, e, listing("newcomer", "bulk fresh", 1), listing("agent-0007", "changed text", 2))
			ev := e.(store.Evictor)
			gone := listing("agent-0003", "bulk common words", 2)
			gone.Status = store.StatusStale // the first an eviction takes
			upsert(t, e, gone)
			if n, err := ev.EvictListings(t.Context(), 1); err != nil || n != 1 {
				t.Fatalf("EvictListings: %d, %v", n, err)
			}
			f := &feedReads{Engine: e}
			s, ok := restored(t, f, path)
			if !ok {
				t.Fatal("the snapshot was discarded")
			}
			// 4 changes (agent-0003 twice: stale, then gone, one row), and
			// the one row the check of the snapshot's last number reads.
			if n := f.rows.Load(); n > 4+1 {
				t.Errorf("read %d rows of the change feed, want at most 5 (the changes since the snapshot)", n)
			}
			if n, _, _ := s.Counts(); n != 300 {
				t.Errorf("index holds %d listings, want 300 (one new, one gone)", n)
			}
			if got := search(t, s, "bulk"); len(got) == 0 || got[0] != "newcomer" {
				t.Errorf("search bulk: %v", got)
			}
			if got := search(t, s, "bulk 0007"); len(got) != 0 {
				t.Errorf("search for the changed listing's old text: %v", got)
			}
			if got := search(t, s, "changed"); !slices.Equal(got, []string{"agent-0007"}) {
				t.Errorf("search changed: %v", got)
			}
			if got := search(t, s, "0003"); len(got) != 0 {
				t.Errorf("the deleted listing is found: %v", got)
			}
			if _, answered, _ := s.Counts(); answered == 0 {
				t.Error("the index answered no search")
			}
		})
	}
}

// TestSnapshotDiscarded: a snapshot that is corrupt, cut short, of
// another format, of another database, or that misses a deletion whose
// row in the change feed was pruned, is not used: the index loads the
// whole feed and answers right.
func TestSnapshotDiscarded(t *testing.T) {
	e := sqlitetest.Open(t)
	dir := t.TempDir()
	good := filepath.Join(dir, "good.snap")
	bulk(t, e, 200)
	snapshotted(t, e, good)
	other := sqlitetest.Open(t)
	bulk(t, other, 50)
	foreign := filepath.Join(dir, "foreign.snap")
	snapshotted(t, other, foreign)
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	edits := 0
	edit := func(fn func(b []byte) []byte) string {
		b := fn(slices.Clone(data))
		edits++
		p := filepath.Join(dir, fmt.Sprintf("bad-%d.snap", edits))
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := map[string]string{
		"flipped byte": edit(func(b []byte) []byte { b[len(b)/2] ^= 0x40; return b }),
		"truncated":    edit(func(b []byte) []byte { return b[:len(b)*2/3] }),
		"version":      edit(func(b []byte) []byte { b[8]++; return b }),
		"garbage":      edit(func(b []byte) []byte { return []byte("not a snapshot at all, but long enough to have a header") }),
		"empty":        edit(func(b []byte) []byte { return b[:0:0] }),
		"foreign":      foreign,
	}
	for name, path := range cases {
		t.Run(name, func(t *testing.T) {
			s, ok := restored(t, e, path)
			if ok {
				t.Fatal("the snapshot was used")
			}
			if n, _, _ := s.Counts(); n != 200 {
				t.Errorf("index holds %d listings, want 200", n)
			}
			if got := search(t, s, "agent 0199"); !slices.Equal(got, []string{"agent-0199"}) {
				t.Errorf("search: %v", got)
			}
		})
	}
	t.Run("pruned deletion", func(t *testing.T) {
		gone := listing("agent-0005", "bulk common words", 2)
		gone.Status = store.StatusStale
		upsert(t, e, gone)
		for i := range 20 { // newer than it: not among the listings a snapshot's check looks up
			upsert(t, e, listing(fmt.Sprintf("extra-%d", i), "extra", 1))
		}
		snap := filepath.Join(t.TempDir(), "index.snap")
		snapshotted(t, e, snap)
		if n, err := e.EvictListings(t.Context(), 1); err != nil || n != 1 {
			t.Fatalf("EvictListings: %d, %v", n, err)
		}
		f := &feedReads{Engine: e}
		f.hideTombs.Store(true) // its row pruned: the feed no longer says it went
		s, ok := restored(t, f, snap)
		if ok {
			t.Fatal("the snapshot was used though the index would keep a deleted listing")
		}
		if got := search(t, s, "0005"); len(got) != 0 {
			t.Errorf("the deleted listing is found: %v", got)
		}
		if n, _, _ := s.Counts(); n != 219 {
			t.Errorf("index holds %d listings, want 219", n)
		}
	})
}

// TestRunWritesAndUsesSnapshot: Run with a SnapshotPath loads from the
// feed and writes a snapshot; a second Run starts from it and reads only
// what changed since; each writes one again when it ends.
func TestRunWritesAndUsesSnapshot(t *testing.T) {
	e := sqlitetest.Open(t)
	path := filepath.Join(t.TempDir(), "index.snap")
	bulk(t, e, 100)
	run := func(f *feedReads) {
		t.Helper()
		s := searchindex.New(f, slog.New(slog.DiscardHandler))
		s.SnapshotPath = path
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- s.Run(ctx) }()
		// Searches fall back to the database until the index is ready:
		// wait for it, so that Run is past its load when it ends.
		waitfor.Until(t, 10*time.Second, "the index to be ready", func() bool {
			state, _ := s.Status()
			return state == searchindex.StateOK
		})
		eventually(t, s, "agent 0042", "agent-0042")
		upsert(t, s, listing(fmt.Sprintf("late-%d", f.rows.Load()), "late", 1))
		eventually(t, s, "late", search(t, s, "late")...)
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run: %v", err)
		}
	}
	first := &feedReads{Engine: e}
	run(first)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("no snapshot after Run: %v", err)
	}
	second := &feedReads{Engine: e}
	run(second)
	if n := second.rows.Load(); n > 3 {
		t.Errorf("the second Run read %d rows of the feed, want at most 3 (the one written since, its own, the check)", n)
	}
	s, ok := restored(t, e, path)
	if !ok {
		t.Fatal("the snapshot written when Run ended was discarded")
	}
	if got := search(t, s, "late"); len(got) != 2 {
		t.Errorf("search late: %v, want both late listings (the second written before the snapshot at exit)", got)
	}
}

// TestConformanceSnapshotSQLite runs the store suite with an index that
// goes through a snapshot (written, then read back in its place) before
// every search: every state the suite makes survives the round trip.
func TestConformanceSnapshotSQLite(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s := indexed(t, sqlitetest.Open(t))
		s.SnapshotPath = filepath.Join(t.TempDir(), "index.snap")
		return &roundTrip{Store: s, t: t}
	})
}

// roundTrip is a Store whose index is written and read back before each
// search.
type roundTrip struct {
	*searchindex.Store
	t *testing.T
}

func (r *roundTrip) SearchAgents(ctx context.Context, q store.SearchQuery) (store.SearchPage, error) {
	if err := r.Store.RoundTrip(); err != nil {
		r.t.Errorf("round trip: %v", err)
	}
	return r.Store.SearchAgents(ctx, q)
}

func (r *roundTrip) TagFacets(ctx context.Context, q store.SearchQuery, limit int) ([]store.TagCount, error) {
	if err := r.Store.RoundTrip(); err != nil {
		r.t.Errorf("round trip: %v", err)
	}
	return r.Store.TagFacets(ctx, q, limit)
}

// TestSaveWhileSearching: a snapshot is written while searches read the
// index and another process writes (run with -race: Save only reads).
func TestSaveWhileSearching(t *testing.T) {
	e := sqlitetest.Open(t)
	bulk(t, e, 200)
	path := filepath.Join(t.TempDir(), "index.snap")
	s := snapshotted(t, e, path)
	s.PollEvery = 0 // every search catches up: it waits for a Save, or goes on
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if _, err := s.SearchAgents(ctx, store.SearchQuery{Q: "bulk"}); err != nil && ctx.Err() == nil {
					t.Errorf("search: %v", err)
					return
				}
			}
		}()
	}
	for i := range 10 {
		upsert(t, e, listing(fmt.Sprintf("more-%d", i), "bulk more", 1)) // behind the index's back
		eventually(t, s, fmt.Sprintf("more %d", i), fmt.Sprintf("more-%d", i))
		s.Save()
	}
	cancel()
	wg.Wait()
	r, ok := restored(t, e, path)
	if !ok {
		t.Fatal("the snapshot was discarded")
	}
	if n, _, _ := r.Counts(); n != 210 {
		t.Errorf("index from the last snapshot holds %d listings, want 210", n)
	}
}
