package storetest

import (
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

// walkFeed pages through SyncChanges from after for ids in [lo, hi) and
// returns the names served and the number to continue after.
func walkFeed(t *testing.T, s store.Store, after int64, lo, hi string, limit int, at time.Time) (names []string, next int64) {
	t.Helper()
	for calls := 1; ; calls++ {
		if calls > 1000 {
			t.Fatalf("more than 1000 pages: next does not advance")
		}
		envs, n, more, err := s.SyncChanges(testContext(t), after, lo, hi, limit, at)
		if err != nil {
			t.Fatalf("SyncChanges(after %d, [%q, %q)): %v", after, lo, hi, err)
		}
		if len(envs) > limit {
			t.Fatalf("SyncChanges returned %d envelopes, limit %d", len(envs), limit)
		}
		for _, env := range envs {
			rec, err := agent.Open(env, at)
			if err != nil {
				t.Fatalf("a served envelope does not open at %v: %v", at, err)
			}
			if rec.ID < lo || (hi != "" && rec.ID >= hi) {
				t.Fatalf("served id %s outside [%q, %q)", rec.ID, lo, hi)
			}
			names = append(names, rec.Name)
		}
		if n < after {
			t.Fatalf("next %d after %d: going back", n, after)
		}
		if more && n == after {
			t.Fatalf("more with next %d after %d: not advancing", n, after)
		}
		after = n
		if !more {
			return names, after
		}
	}
}

// testSyncChanges: incremental sync serves, in sync number order, the
// envelopes of what changed after a number (tombstones too, never expired
// ones), in an id range; continuing after next serves only later changes.
func testSyncChanges(t *testing.T, s store.Store) {
	at := now()
	p := newPublisher(t)
	id, err := s.FeedID(testContext(t))
	if err != nil || id == "" {
		t.Fatalf("FeedID = %q, %v", id, err)
	}
	if again, _ := s.FeedID(testContext(t)); again != id {
		t.Fatalf("FeedID changed: %q, then %q", id, again)
	}
	if got, _ := walkFeed(t, s, 0, "", "", 10, at); len(got) != 0 {
		t.Fatalf("empty store served %q", got)
	}
	mustUpsert(t, s,
		p.listing(t, at, agent.Record{Name: "feed-a"}),
		p.listing(t, at, agent.Record{Name: "feed-b"}),
		p.listing(t, at, agent.Record{Name: "feed-short", ExpiresAt: at.Add(30 * time.Minute)}),
		p.listing(t, at, agent.Record{Name: "feed-gone", Seq: 1}),
		p.listing(t, at, agent.Record{Name: "feed-c"}),
		p.listing(t, at, agent.Record{Name: "feed-gone", Seq: 2, Tombstone: true}),
		p.listing(t, at, agent.Record{Name: "feed-a", Seq: 2}), // changed last
	)
	later := at.Add(45 * time.Minute) // feed-short has expired, the rest have not
	want := []string{"feed-b", "feed-c", "feed-gone", "feed-a"}
	var head int64
	for _, limit := range []int{1, 2, 3, 100} {
		got, next := walkFeed(t, s, 0, "", "", limit, later)
		if !slices.Equal(got, want) {
			t.Errorf("limit %d: served %q, want %q", limit, got, want)
		}
		head = next
	}
	// Two shards cover the whole.
	lo, _ := walkFeed(t, s, 0, "", "m", 2, later)
	hi, _ := walkFeed(t, s, 0, "m", "", 2, later)
	all := append(lo, hi...)
	sort.Strings(all)
	sorted := slices.Clone(want)
	sort.Strings(sorted)
	if !slices.Equal(all, sorted) {
		t.Errorf("the shards served %q and %q, want %q between them", lo, hi, want)
	}
	if envs, h, _, err := s.SyncChanges(testContext(t), 0, "", "", 0, later); err != nil || len(envs) != 0 || h < head {
		t.Errorf("SyncChanges(limit 0) = %d envelopes, head %d, %v; want none, head ≥ %d", len(envs), h, err, head)
	}
	// Only what changed after head; a status change is no change of
	// the envelope.
	if _, err := s.SetHostStatus(testContext(t), p.peer, store.StatusStale, at); err != nil {
		t.Fatal(err)
	}
	if got, _ := walkFeed(t, s, head, "", "", 10, later); len(got) != 0 {
		t.Errorf("no envelope changed, yet served %q", got)
	}
	mustUpsert(t, s,
		p.listing(t, at, agent.Record{Name: "feed-d"}),
		p.listing(t, at, agent.Record{Name: "feed-b", Seq: 3}),
	)
	if got, _ := walkFeed(t, s, head, "", "", 1, later); !slices.Equal(got, []string{"feed-d", "feed-b"}) {
		t.Errorf("after head: served %q, want [feed-d feed-b]", got)
	}
}

// testSyncCursors: a cursor is kept per peer and shard, and pruned when
// not written for long, but for the rows of peer "".
func testSyncCursors(t *testing.T, s store.Store) {
	at := now()
	ctx := testContext(t)
	if feed, after, complete, err := s.SyncCursor(ctx, "peer-a", 3); err != nil || feed != "" || after != 0 || complete {
		t.Fatalf("no cursor: got %q %d %v %v", feed, after, complete, err)
	}
	for _, c := range []struct {
		peer     string
		shard    int
		after    int64
		complete bool
		at       time.Time
	}{
		{"peer-a", 3, 10, false, at},
		{"peer-a", 3, 42, true, at}, // replaces
		{"peer-a", 4, 7, false, at},
		{"peer-b", 3, 1, false, at.Add(-10 * 24 * time.Hour)},
		{"", 3, 0, true, at.Add(-10 * 24 * time.Hour)},
	} {
		if err := s.SetSyncCursor(ctx, c.peer, c.shard, "feed-1", c.after, c.complete, c.at); err != nil {
			t.Fatal(err)
		}
	}
	if feed, after, complete, err := s.SyncCursor(ctx, "peer-a", 3); err != nil || feed != "feed-1" || after != 42 || !complete {
		t.Errorf("peer-a/3: got %q %d %v %v, want feed-1 42 true", feed, after, complete, err)
	}
	if _, after, complete, _ := s.SyncCursor(ctx, "peer-a", 4); after != 7 || complete {
		t.Errorf("peer-a/4: got %d %v, want 7 false", after, complete)
	}
	n, err := s.PruneSyncCursors(ctx, at.Add(-7*24*time.Hour))
	if err != nil || n != 1 {
		t.Errorf("PruneSyncCursors = %d, %v; want 1 (peer-b's)", n, err)
	}
	if feed, _, _, _ := s.SyncCursor(ctx, "peer-b", 3); feed != "" {
		t.Errorf("peer-b's old cursor was kept")
	}
	if _, _, complete, _ := s.SyncCursor(ctx, "", 3); !complete {
		t.Errorf("the row of peer \"\" was pruned")
	}
}
