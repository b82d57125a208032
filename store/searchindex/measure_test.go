package searchindex_test

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/store/searchindex"
	"github.com/agentsite/agentsite/store/sqlite"
)

// cpu is the process's user+system CPU time.
func cpu() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// sample is a measurement under way: the wall-clock and CPU time since
// startSample.
type sample struct {
	start time.Time
	cpu   time.Duration
}

func startSample() sample { return sample{time.Now(), cpu()} }

// took is the wall-clock and CPU time since the sample started. Call it
// before heapInuse in a list of arguments: the collection that runs is not
// part of what was measured.
func (s sample) took() string {
	return fmt.Sprintf("%.2fs, %.2f CPU-s", time.Since(s.start).Seconds(), (cpu() - s.cpu).Seconds())
}

// measureDB opens $AGENTSITE_INDEX_DB for a measure test, closed when the
// test ends; the test is skipped without it.
func measureDB(t *testing.T) *sqlite.DB {
	t.Helper()
	path := os.Getenv("AGENTSITE_INDEX_DB")
	if path == "" {
		t.Skip("AGENTSITE_INDEX_DB not set")
	}
	db, err := sqlite.Open(t.Context(), path, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// heapInuse is the heap in use after a collection.
func heapInuse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// TestMeasureLoad loads the index of the SQLite database in
// $AGENTSITE_INDEX_DB (a copy of a seeded data dir's agentsite.db) and
// reports how long it took, its CPU time and the heap in use after it:
// the figures of BENCHMARKS.md's 1M catalogue. Skipped without it.
func TestMeasureLoad(t *testing.T) {
	db := measureDB(t)
	base := heapInuse()
	s := searchindex.New(db, slog.New(slog.DiscardHandler))
	start := startSample()
	if err := s.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	n, _, _ := s.Counts()
	t.Logf("feed load: %d listings in %s; heap in use %.1f MB (index %.1f MB)",
		n, start.took(), float64(heapInuse())/1e6, float64(heapInuse()-base)/1e6)
	t.Log(s.IndexSizes())
	runtime.KeepAlive(s)
}

// TestMeasureSnapshot loads the index of $AGENTSITE_INDEX_DB from the
// feed, writes its snapshot, and loads a second index from it: the
// snapshot's size, write and load times, and the heap in use after each.
func TestMeasureSnapshot(t *testing.T) {
	db := measureDB(t)
	snap := filepath.Join(t.TempDir(), "index.snap")
	if p := os.Getenv("AGENTSITE_INDEX_SNAP"); p != "" {
		snap = p
	}
	base := heapInuse()
	if _, err := os.Stat(snap); err != nil {
		s := searchindex.New(db, slog.New(slog.DiscardHandler))
		s.SnapshotPath = snap
		start := startSample()
		if err := s.Load(t.Context()); err != nil {
			t.Fatal(err)
		}
		t.Logf("feed load: %s; index heap %.1f MB", start.took(), float64(heapInuse()-base)/1e6)
		start = startSample()
		s.Save()
		fi, err := os.Stat(snap)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("snapshot written: %.1f MB in %s", float64(fi.Size())/1e6, start.took())
		runtime.KeepAlive(s)
	}
	base = heapInuse()
	s2 := searchindex.New(db, slog.New(slog.DiscardHandler))
	s2.SnapshotPath = snap
	start := startSample()
	ok, err := s2.Restore(t.Context())
	if err != nil || !ok {
		t.Fatalf("Restore: %v %v", ok, err)
	}
	n, _, _ := s2.Counts()
	t.Logf("snapshot load: %d listings in %s; index heap %.1f MB, heap in use %.1f MB", n, start.took(), float64(heapInuse()-base)/1e6, float64(heapInuse())/1e6)
	t.Log(s2.IndexSizes())
	t.Log(s2.DisjointSizes())
	again := filepath.Join(t.TempDir(), "again.snap")
	start = startSample()
	size, err := s2.WriteSnapshotTo(again)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("snapshot written again: %.1f MB in %s", float64(size)/1e6, start.took())
	runtime.KeepAlive(s2)
}

// TestMeasureSearchHeap: the heap after many distinct searches, on an
// index loaded from the feed and on one read from its snapshot.
func TestMeasureSearchHeap(t *testing.T) {
	db := measureDB(t)
	snap := filepath.Join(t.TempDir(), "index.snap")
	s := searchindex.New(db, slog.New(slog.DiscardHandler))
	s.SnapshotPath = snap
	if err := s.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	s.Save()
	words := []string{"weather", "code", "finance", "travel", "stock", "agent", "report", "data", "search", "image", "a", "b", "c", "ch", "re", "st"}
	run := func(name string, s *searchindex.Store) {
		before := heapInuse()
		for i := range 20000 {
			q := words[i%len(words)] + " " + words[(i/len(words))%len(words)]
			if _, err := s.SearchAgents(t.Context(), store.SearchQuery{Q: q, Limit: 20}); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("%s: heap in use %.1f MB before 20k searches, %.1f MB after", name, float64(before)/1e6, float64(heapInuse())/1e6)
	}
	run("feed", s)
	s2 := searchindex.New(db, slog.New(slog.DiscardHandler))
	s2.SnapshotPath = snap
	if ok, err := s2.Restore(t.Context()); !ok || err != nil {
		t.Fatal(ok, err)
	}
	s = nil
	run("snapshot", s2)
}
