package searchindex_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentsite/agentsite/internal/waitfor"
	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/store/searchindex"
	"github.com/agentsite/agentsite/store/sqlite/sqlitetest"
)

// flaky is an engine whose change feed fails its next fails reads: by
// turns at once with an error whose text must not reach /readyz, and by
// holding the read past a short store deadline (store.Options.Bound, the
// engines' own path), as a loaded database does.
type flaky struct {
	searchindex.Engine
	fails atomic.Int32
}

func (f *flaky) ListingChanges(ctx context.Context, after int64, also []int64, limit int) ([]store.IndexDoc, error) {
	n := f.fails.Load()
	for n > 0 && !f.fails.CompareAndSwap(n, n-1) {
		n = f.fails.Load()
	}
	switch {
	case n <= 0:
		return f.Engine.ListingChanges(ctx, after, also, limit)
	case n%2 == 0:
		return nil, errors.New("read tcp 10.0.0.7:5432: connection reset (user=agentsite)")
	}
	bctx, end := store.Options{Timeout: 5 * time.Millisecond}.Bound(ctx)
	<-bctx.Done()
	return nil, end(bctx.Err())
}

// logRecorder keeps the messages of the records logged at level or above.
type logRecorder struct {
	level slog.Level
	mu    sync.Mutex
	msgs  []string
}

func (r *logRecorder) Enabled(_ context.Context, l slog.Level) bool { return l >= r.level }
func (r *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, rec.Level.String()+" "+rec.Message)
	return nil
}
func (r *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *logRecorder) WithGroup(string) slog.Handler      { return r }

func (r *logRecorder) count(prefix string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, m := range r.msgs {
		if strings.HasPrefix(m, prefix) {
			n++
		}
	}
	return n
}

// TestRunRetries: failed reads of the change feed, loading and catching
// up, never stop the index. Each is retried after the injected backoff
// (no real waiting), the first of a streak logged once, all counted;
// Status says retrying, with the error's kind and never its text; the
// database answers searches meanwhile; and the index ends up loaded,
// caught up and answering.
func TestRunRetries(t *testing.T) {
	e := &flaky{Engine: sqlitetest.Open(t)}
	upsert(t, e, listing("weather-oracle", "forecasts for any city", 1))
	logs := &logRecorder{level: slog.LevelInfo}
	s := searchindex.New(e, slog.New(logs))
	s.PollEvery = time.Millisecond
	if state, kind := s.Status(); state != searchindex.StateLoading || kind != "" {
		t.Fatalf("before Run: status %q %q, want loading", state, kind)
	}
	var (
		mu       sync.Mutex
		attempts []int
		seen     []string // Status at each wait
	)
	s.Backoff = func(n int) time.Duration {
		mu.Lock()
		defer mu.Unlock()
		attempts = append(attempts, n)
		return time.Hour
	}
	s.Sleep = func(ctx context.Context, d time.Duration) bool {
		state, kind := s.Status()
		mu.Lock()
		seen = append(seen, state+" "+kind)
		mu.Unlock()
		if d != time.Hour {
			t.Errorf("waited %v, not the backoff", d)
		}
		// Meanwhile the database answers.
		if page, err := s.SearchAgents(ctx, store.SearchQuery{Q: "forec"}); err != nil || len(page.Listings) != 1 {
			t.Errorf("search while retrying: %d listings, %v", len(page.Listings), err)
		}
		return ctx.Err() == nil
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(s.Collectors()...)

	e.fails.Store(4)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v, want nil when its context ends", err)
		}
	}()

	waitfor.Until(t, 20*time.Second, "the index loaded", func() bool { state, _ := s.Status(); return state == searchindex.StateOK })
	mu.Lock()
	wantSeen := []string{"retrying error", "retrying timeout", "retrying error", "retrying timeout"}
	if !slices.Equal(seen, wantSeen) || !slices.Equal(attempts, []int{1, 2, 3, 4}) {
		t.Errorf("loading: statuses %q, backoff attempts %v; want %q, [1 2 3 4]", seen, attempts, wantSeen)
	}
	seen, attempts = nil, nil
	mu.Unlock()
	_, answeredBefore, _ := s.Counts()
	if got := search(t, s, "forec"); !slices.Equal(got, []string{"weather-oracle"}) {
		t.Fatalf("search once loaded: %v", got)
	}
	if _, answered, _ := s.Counts(); answered != answeredBefore+1 {
		t.Fatal("the loaded index did not answer the search")
	}
	if n := logs.count("WARN"); n != 1 {
		t.Errorf("%d warnings for one streak of failed reads, want 1: %q", n, logs.msgs)
	}

	// Catching up: a listing written behind the index's back, two failed
	// reads, then it is in the index.
	e.fails.Store(2)
	waitfor.Until(t, 20*time.Second, "two more retries", func() bool { return s.Retries() == 6 })
	upsert(t, e.Engine, listing("tide-table", "tides and currents", 1))
	waitfor.Until(t, 20*time.Second, "the index caught up", func() bool {
		n, _, _ := s.Counts()
		state, _ := s.Status()
		return n == 2 && state == searchindex.StateOK
	})
	mu.Lock()
	if want := []string{"retrying error", "retrying timeout"}; !slices.Equal(seen, want) || !slices.Equal(attempts, []int{1, 2}) {
		t.Errorf("catching up: statuses %q, backoff attempts %v; want %q, [1 2]", seen, attempts, want)
	}
	mu.Unlock()
	if got := search(t, s, "tides"); !slices.Equal(got, []string{"tide-table"}) {
		t.Errorf("search after catching up: %v", got)
	}
	if w, i := logs.count("WARN"), logs.count("INFO search index: reading the store again"); w != 2 || i != 2 {
		t.Errorf("two streaks logged %d warnings and %d recoveries, want 2 and 2: %q", w, i, logs.msgs)
	}
	if n := s.Retries(); n != 6 {
		t.Errorf("Retries = %d, want 6", n)
	}
	if got := gathered(t, reg, "agentsite_search_index_retries_total"); got != 6 {
		t.Errorf("agentsite_search_index_retries_total = %v, want 6", got)
	}
	if got := gathered(t, reg, "agentsite_search_index_retrying"); got != 0 {
		t.Errorf("agentsite_search_index_retrying = %v once caught up, want 0", got)
	}
}

// TestDefaultBackoff: the waits grow from a fraction of a second to the
// cap, jittered between half and all of each step.
func TestDefaultBackoff(t *testing.T) {
	for n, hi := range map[int]time.Duration{1: 250 * time.Millisecond, 2: 500 * time.Millisecond, 5: 4 * time.Second, 8: 30 * time.Second, 1000: 30 * time.Second} {
		for range 100 {
			if d := searchindex.DefaultBackoff(n); d < hi/2 || d > hi {
				t.Fatalf("DefaultBackoff(%d) = %v, want within [%v, %v]", n, d, hi/2, hi)
			}
		}
	}
}

// gathered is the value of the metric name in reg.
func gathered(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		m := mf.GetMetric()[0]
		if c := m.GetCounter(); c != nil {
			return c.GetValue()
		}
		return m.GetGauge().GetValue()
	}
	t.Fatalf("no metric %s", name)
	return 0
}
