package searchindex

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"time"
)

// Restore loads the index from the snapshot at SnapshotPath and catches
// up from the change feed after it: true when the index answers searches
// afterwards. A snapshot it cannot trust is discarded (logged; false,
// nil: Run loads from the feed instead): unreadable, of another format, a
// bad checksum; of another database (its feed id); newer than the
// database (a database restored from a backup); listings that the
// database holds at other change numbers; or, once caught up, per-status
// counts other than the database's (a listing deleted after the
// snapshot whose row in the change feed was pruned since: migration
// 0010 prunes them ten minutes after, and the index would keep it). An
// error is a failed read of the database: try again.
func (s *Store) Restore(ctx context.Context) (bool, error) {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	begun, w := time.Now(), s.writes.Load()
	ix, st, err := readSnapshot(s.SnapshotPath)
	if errors.Is(err, fs.ErrNotExist) {
		s.log.Info("search index: no snapshot; loading from the change feed", "path", s.SnapshotPath)
		return false, nil
	}
	if err != nil {
		s.log.Warn("search index: snapshot discarded; loading from the change feed", "path", s.SnapshotPath, "why", err.Error())
		return false, nil
	}
	read := time.Since(begun)
	why, err := s.trust(ctx, ix, st)
	if err != nil {
		return false, fmt.Errorf("search index: check snapshot: %w", err)
	}
	if why == "" {
		why, err = s.install(ctx, ix, st, w)
		if err != nil {
			s.reset()
			return false, fmt.Errorf("search index: catch up after snapshot: %w", err)
		}
	}
	if why != "" {
		s.reset()
		s.log.Warn("search index: snapshot discarded; loading from the change feed", "path", s.SnapshotPath, "why", why)
		return false, nil
	}
	s.mu.RLock()
	held := s.ix.docs.n
	s.mu.RUnlock()
	s.ready.Store(true)
	s.loadNanos.Store(int64(time.Since(begun)))
	s.log.Info("search index: loaded from snapshot", "listings", held, "snapshot_after", st.after, "caught_up_to", s.after,
		"read", read.Round(time.Millisecond), "elapsed", time.Since(begun).Round(time.Millisecond))
	return true, nil
}

// sampleSize is how many of a snapshot's newest listings are looked up
// in the database before it is trusted.
const sampleSize = 16

// trust checks a snapshot read against the database before it is
// installed: why not, or "".
func (s *Store) trust(ctx context.Context, ix *index, st snapshotState) (string, error) {
	feed, err := s.Engine.FeedID(ctx)
	if err != nil {
		return "", err
	}
	s.feed = feed
	if feed != st.feed {
		return fmt.Sprintf("taken of another database (feed %q, this one's %q)", st.feed, feed), nil
	}
	if st.after > 0 {
		// The largest change number is never pruned: some row holds a
		// number ≥ after unless the database is older than the snapshot.
		docs, err := s.Engine.ListingChanges(ctx, st.after-1, nil, 1)
		if err != nil {
			return "", err
		}
		if len(docs) == 0 || docs[0].ChangeSeq < st.after {
			return fmt.Sprintf("the database's change feed ends before the snapshot's change %d", st.after), nil
		}
	}
	// Its newest listings: each in the database at the same change
	// number, or at one past the snapshot (changed since).
	type pd struct {
		pos uint32
		seq int64
	}
	var newest []pd
	ix.docs.each(func(pos uint32, d doc) {
		if len(newest) == sampleSize && d.seq <= newest[0].seq {
			return
		}
		i, _ := slices.BinarySearchFunc(newest, d.seq, func(p pd, seq int64) int { return cmp.Compare(p.seq, seq) })
		newest = slices.Insert(newest, i, pd{pos, d.seq})
		if len(newest) > sampleSize {
			newest = newest[1:]
		}
	})
	if len(newest) == 0 {
		return "", nil
	}
	pos := make([]int64, len(newest))
	for i, p := range newest {
		pos[i] = int64(p.pos)
	}
	rows, err := s.Engine.ListingsAt(ctx, pos, true)
	if err != nil {
		return "", err
	}
	at := make(map[int64]int64, len(rows))
	for _, r := range rows {
		at[r.Pos] = r.ChangeSeq
	}
	for _, p := range newest {
		seq, ok := at[int64(p.pos)]
		if !ok || seq != p.seq && seq <= st.after {
			return fmt.Sprintf("the listing at %d has change %d in the snapshot, %d in the database (present: %v)", p.pos, p.seq, seq, ok), nil
		}
	}
	return "", nil
}

// countTries bounds the catch-ups install makes to see the database's
// counts between two that read nothing.
const countTries = 5

// install makes ix the index, catches up from the change feed after the
// snapshot, and checks the counts: why the snapshot is not to be
// trusted, or "". w is the write count before the snapshot was read.
func (s *Store) install(ctx context.Context, ix *index, st snapshotState, w uint64) (string, error) {
	now := time.Now()
	s.mu.Lock()
	s.ix = ix
	s.epoch++
	s.mu.Unlock()
	s.after, s.snapAfter = st.after, st.after
	clear(s.gaps)
	// The numbers the index had not seen when the snapshot was taken
	// (Postgres: transactions in flight) are asked for again.
	for _, g := range st.gaps {
		if g > 0 && g < st.after {
			s.gaps[g] = now
		}
	}
	if err := s.catchUpLocked(ctx, w); err != nil {
		return "", err
	}
	var want, got map[string]int
	for range countTries {
		at := s.after
		counts, err := s.Engine.CountByStatus(ctx)
		if err != nil {
			return "", err
		}
		if err := s.catchUpLocked(ctx, s.writes.Load()); err != nil {
			return "", err
		}
		if s.after != at {
			continue // the counts may be of a state the index did not see
		}
		want, got = counts, s.statusCounts()
		if maps.Equal(want, got) {
			return "", nil
		}
	}
	if want == nil {
		return "", nil // the database kept changing: the counts could not be compared (the snapshot passed every other check)
	}
	return fmt.Sprintf("after catching up, the index holds %v listings by status, the database %v", got, want), nil
}

// statusCounts counts the listings the index holds by status, as
// CountByStatus does.
func (s *Store) statusCounts() map[string]int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := map[string]int{}
	for st, b := range s.ix.status {
		if n := int(b.GetCardinality()); n > 0 {
			out[st] = n
		}
	}
	return out
}

// reset empties the index, for a load from the feed. syncMu is held.
func (s *Store) reset() {
	s.mu.Lock()
	s.ix = newIndex()
	s.epoch++
	s.mu.Unlock()
	s.after, s.snapAfter = 0, 0
	clear(s.gaps)
}

// Save writes the snapshot (SnapshotPath) if the index loaded and changed
// since the last one; a failure is logged. Searches go on meanwhile; a
// catch-up waits for it, and searches serve the index as it is unless
// this process wrote since the last catch-up.
func (s *Store) Save() {
	if s.SnapshotPath == "" {
		return
	}
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	if !s.ready.Load() || s.feed == "" || s.after == s.snapAfter {
		return
	}
	s.saving.Store(true)
	defer s.saving.Store(false)
	begun, c := time.Now(), cpuTime()
	st := snapshotState{feed: s.feed, after: s.after, gaps: slices.Sorted(maps.Keys(s.gaps))}
	n, err := writeSnapshot(s.SnapshotPath, s.ix, st)
	if err != nil {
		s.log.Warn("search index: snapshot not written", "path", s.SnapshotPath, "err", err)
		return
	}
	s.snapAfter = s.after
	s.log.Info("search index: snapshot written", "path", s.SnapshotPath, "bytes", n, "after", st.after,
		"elapsed", time.Since(begun).Round(time.Millisecond), "cpu", (cpuTime() - c).Round(time.Millisecond))
}
