package searchindex

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/RoaringBitmap/roaring/v2"
)

// sizes is a deterministic account of the index's memory by part, in
// bytes: what its slices, postings and bitmaps hold (not the Go heap's
// overhead of each allocation, nor map buckets).
func (ix *index) sizes() map[string]int {
	out := map[string]int{}
	out["docs"] = len(ix.docs.pages)*8 + 16*(1<<docPageBits)*countPages(ix.docs.pages)
	out["words"] = cap(ix.list.bytes) + 4*cap(ix.list.ends) + 4*cap(ix.sorted)
	out["refs"] = 4 * (cap(ix.post[title]) + cap(ix.post[head]) + cap(ix.post[all]))
	pl := 32 * cap(ix.pl.pl)
	for _, p := range ix.pl.pl {
		if p.big != nil {
			pl += int(p.big.GetSizeInBytes())
		} else {
			pl += 4 * cap(p.small)
		}
	}
	out["postings"] = pl
	for i, m := range ix.filterMaps() {
		n := 0
		for k, b := range *m {
			n += len(k) + 16 + 8 + int(b.GetSizeInBytes())
		}
		out[[]string{"status", "health", "tags", "owners"}[i]] = n
	}
	return out
}

func countPages[T any](ps []*T) int {
	n := 0
	for _, p := range ps {
		if p != nil {
			n++
		}
	}
	return n
}

// IndexSizes is the index's sizes as a line (tests, measurements).
func (s *Store) IndexSizes() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	m := s.ix.sizes()
	keys := make([]string, 0, len(m))
	total := 0
	for k, v := range m {
		keys = append(keys, k)
		total += v
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s %.1f MB, ", k, float64(m[k])/1e6)
	}
	big, small, inl := 0, 0, 0
	for _, p := range s.ix.pl.pl {
		if p.big != nil {
			big++
		} else if p.small != nil {
			small++
		}
	}
	for f := range nFields {
		for _, r := range s.ix.post[f] {
			if r&inline != 0 {
				inl++
			}
		}
	}
	fmt.Fprintf(&b, "total %.1f MB; %d words, %d bitmaps, %d small, %d inline refs, %d owners, %d tags", float64(total)/1e6, s.ix.list.len(), big, small, inl, len(s.ix.owners), len(s.ix.tags))
	return b.String()
}

// RoundTrip catches up, writes the index's snapshot to SnapshotPath and
// puts the index read back from it in its place (tests: whatever the
// index holds must survive a snapshot).
func (s *Store) RoundTrip() error {
	if err := s.catchUp(context.Background(), true); err != nil {
		return err
	}
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	st := snapshotState{feed: "test", after: s.after}
	if _, err := writeSnapshot(s.SnapshotPath, s.ix, st); err != nil {
		return err
	}
	ix, got, err := readSnapshot(s.SnapshotPath)
	if err != nil {
		return err
	}
	if got.after != st.after || got.feed != st.feed {
		return fmt.Errorf("read back %+v, wrote %+v", got, st)
	}
	s.mu.Lock()
	s.ix = ix
	s.mu.Unlock()
	return nil
}

// WriteSnapshotTo writes the index's snapshot to path (measurements).
func (s *Store) WriteSnapshotTo(path string) (int64, error) {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	return writeSnapshot(path, s.ix, snapshotState{feed: s.feed, after: s.after, gaps: nil})
}

// DisjointSizes is what the bitmap postings would take if each field held
// only what the field before does not (measurements).
func (s *Store) DisjointSizes() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	ix := s.ix
	now, disjoint := 0, 0
	get := func(r ref) *roaring.Bitmap {
		switch {
		case r == 0:
			return roaring.New()
		case r&inline != 0:
			return roaring.BitmapOf(r.one())
		}
		p := ix.pl.at(r)
		if p.big != nil {
			return p.big
		}
		return roaring.BitmapOf(p.small...)
	}
	for id := range ix.list.len() {
		var rs [nFields]ref
		table := false
		for f := range nFields {
			rs[f] = ix.post[f][id]
			if rs[f] != 0 && rs[f]&inline == 0 && ix.pl.at(rs[f]).big != nil {
				table = true
			}
		}
		if !table {
			continue
		}
		seen := map[ref]bool{}
		for f := range nFields {
			if rs[f] != 0 && rs[f]&inline == 0 && !seen[rs[f]] {
				seen[rs[f]] = true
				now += int(get(rs[f]).GetSizeInBytes())
			}
		}
		t, h, a := get(rs[title]), get(rs[head]), get(rs[all])
		disjoint += int(t.GetSizeInBytes() + roaring.AndNot(h, t).GetSizeInBytes() + roaring.AndNot(a, h).GetSizeInBytes())
	}
	return fmt.Sprintf("bitmap postings now %.1f MB, disjoint %.1f MB", float64(now)/1e6, float64(disjoint)/1e6)
}

// CatchUp applies the changes of the feed now.
func (s *Store) CatchUp() error { return s.catchUp(context.Background(), true) }
