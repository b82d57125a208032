package searchindex

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

// Engine is what the index stands in front of: a whole store with a change
// feed, which runs batches and reads many listings at once (both engines).
type Engine interface {
	store.Store
	store.ChangeFeed
	store.Batcher
	store.AgentsGetter
}

// Store is an Engine whose text searches the index answers once it has
// loaded (Run); until then, and for what it does not answer (store.SortName, store.SortUsed,
// a Publishers filter: a short list of peers, which the engines' publisher column answers),
// the engine does. The writes of listings are declared here, counted so
// that the next search catches up; every other call goes to the embedded
// engine, and each of those is named in engine_test.go's passedThrough
// with why the index need not see it (a test fails on a method of Engine
// that is neither).
type Store struct {
	Engine
	log *slog.Logger
	// PollEvery bounds how old the index may be when a search starts,
	// for the writes of other processes (New sets 1 s).
	PollEvery time.Duration
	// RowTTL is how long the row cache may serve a listing it read (New
	// sets 1 s, the read cache's TTL); 0 turns it off.
	RowTTL time.Duration
	// Backoff is Run's wait before the n-th retry in a row (n from 1) of
	// a failed read of the change feed (New sets DefaultBackoff).
	Backoff func(n int) time.Duration
	// Sleep waits d, or until ctx ends (false); New sets a timer. Tests
	// replace it (and Backoff) to retry without waiting.
	Sleep func(ctx context.Context, d time.Duration) bool
	// SnapshotPath is the file Run keeps the index in between runs ("":
	// none): read at start, then only the changes since are read from
	// the change feed (snapshot.go).
	SnapshotPath string
	// SnapshotEvery is how often Run writes the snapshot again when the
	// index changed since the last one (New sets 10 minutes); it is also
	// written after a load from the feed and when Run ends.
	SnapshotEvery time.Duration

	mu sync.RWMutex
	ix *index
	// epoch counts the indexes ix has held (mu): a new one on each load.
	epoch uint64
	// ready: the index holds every listing up to its first catch-up.
	ready atomic.Bool
	// loadNanos is how long the last Load took (the
	// agentsite_search_index_load_seconds gauge).
	loadNanos atomic.Int64

	// syncMu serialises catch-ups; after, gaps, feed and snapAfter
	// belong to it. Only its holder changes ix.
	syncMu sync.Mutex
	after  int64               // the largest change number applied
	gaps   map[int64]time.Time // numbers below after not seen yet (Postgres: in-flight transactions)
	// feed is the database's feed id (store.SyncFeed), which a snapshot
	// names; snapAfter is after when the last snapshot was written or
	// read. saving: a snapshot is being written (syncMu held).
	feed      string
	snapAfter int64
	saving    atomic.Bool
	// writes counts this process's writes through the Store; synced is
	// its value when the last catch-up started, lastSync when it ended.
	writes   atomic.Uint64
	synced   atomic.Uint64
	lastSync atomic.Int64

	answered, passed atomic.Uint64
	// mark counts the batches of changes applied (ChangeMark).
	mark atomic.Uint64

	// retrying: Run's last read failed and it waits to try again;
	// searches use the database until a read succeeds. statusMu guards
	// the streak's fields.
	retrying    atomic.Bool
	retries     atomic.Uint64
	statusMu    sync.Mutex
	lastErrKind string
	streakStart time.Time
	// batch is the rows a read of Load asks for (syncMu): halved after a
	// failed read, doubled back after each that succeeds.
	batch int

	rows   rowCache
	counts countMemo
}

// rowCache keeps the listings pages were last made of, by position, so
// that the next page with the same listings reads none of them from the
// database: the newest listings matching common words are on most pages.
// An entry serves only while its change number is the index's, this
// process has not written since it was read (the writes a change number
// does not cover: a new version with the same text, a heartbeat's
// last_seen, health latencies) and for RowTTL (any write by another
// process): the read cache's rule (store.Cache).
type rowCache struct {
	mu     sync.Mutex
	writes uint64 // Store.writes when the entries were read
	rows   map[int64]cachedRow
	bytes  int // store.ListingSize of the rows held
}

// cachedRow is a listing of the row cache. l points into the rows that
// the engine's read of a page returned (ListingsAt), which the cache keeps
// as they are, instead of a copy of each listing in the map (~4 KB of
// what a distinct-query search allocated; BENCHMARKS.md "Memory at 100k
// listings", stop 40). Those rows are never changed after the read.
type cachedRow struct {
	l       *store.Listing
	seq     int64
	full    bool // read without PublicOnly: serves any search
	expires time.Time
}

// maxRowBytes bounds the row cache (store.ListingSize of its rows): ~4,000
// listings read for the API (~2 KB each, without their envelopes), about
// 10 MB of Go heap when full (the map and the rows' bytes). It was 16 MiB
// (~8,000 listings, ~17 MB of heap): at 100k listings that was the
// largest part of a live heap whose size, with the soft memory limit,
// sets the node's RSS; halving it and the read cache (store.CacheMaxBytes)
// cost ~4 % of the distinct-query searches per second (BENCHMARKS.md
// "Memory at 100k listings", stop 39).
// Much smaller hurts: with 4,096 listings counted otherwise the cache was
// emptied several times a second under that load, and nearly every page
// was a query to the database.
const maxRowBytes = 8 << 20

// put adds a row, emptying the cache first when it would pass maxRowBytes.
func (c *rowCache) put(pos int64, e cachedRow) {
	n := store.ListingSize(e.l)
	if old, ok := c.rows[pos]; ok {
		c.bytes -= store.ListingSize(old.l)
	}
	if c.bytes+n > maxRowBytes {
		clear(c.rows)
		c.bytes = 0
	}
	c.rows[pos] = e
	c.bytes += n
}

var _ Engine = (*Store)(nil)

// New puts an index in front of e; it answers searches once Run has loaded
// it.
func New(e Engine, log *slog.Logger) *Store {
	return &Store{Engine: e, log: log, PollEvery: time.Second, RowTTL: time.Second, Backoff: DefaultBackoff, Sleep: sleep,
		SnapshotEvery: 10 * time.Minute, ix: newIndex(), gaps: map[int64]time.Time{}, batch: loadBatch}
}

// Batch sizes of the change feed reads.
const (
	loadBatch = 5_000
	syncBatch = 2_000
	// minLoadBatch is as small as a failed read makes the load's batch.
	minLoadBatch = 500
	// maxGaps bounds the numbers a catch-up asks for again; gapTTL how
	// long it asks (a transaction that took a number and has not
	// committed since has rolled back, or the number was replaced by a
	// newer change of its row).
	maxGaps = 4096
	gapTTL  = time.Minute
)

// Run loads the index from the change feed, then keeps it caught up every
// PollEvery; it returns only when ctx ends (nil). A failed read never
// stops it: it is logged once per streak, counted (Retries), shown by
// Status, and tried again after Backoff, searches using the database
// meanwhile. A load resumes where the failed read stopped; its backoff
// starts over when a try made progress.
//
// With a SnapshotPath, Run first loads the snapshot there, if it is one of
// this database, and reads only the changes since; after a load from the
// feed it writes one, then again every SnapshotEvery when the index
// changed, and when ctx ends.
func (s *Store) Run(ctx context.Context) error {
	restored := false
	if s.SnapshotPath != "" {
		for n := 1; ; n++ {
			ok, err := s.Restore(ctx)
			if err == nil {
				restored = ok
				break
			}
			if !s.retryAfter(ctx, "load snapshot", err, n) {
				return nil
			}
		}
	}
	for n := 1; !restored; n++ {
		at := s.applied()
		err := s.Load(ctx)
		if err == nil {
			s.Save()
			break
		}
		if s.applied() != at {
			n = 1
		}
		if !s.retryAfter(ctx, "load", err, n) {
			return nil
		}
	}
	s.recovered()
	t := time.NewTicker(s.PollEvery)
	defer t.Stop()
	every := s.SnapshotEvery
	if s.SnapshotPath == "" || every <= 0 {
		every = time.Duration(1<<63 - 1)
	}
	snap := time.NewTicker(every)
	defer snap.Stop()
	for n := 1; ; {
		select {
		case <-ctx.Done():
			s.Save()
			return nil
		case <-snap.C:
			s.Save()
			continue
		case <-t.C:
		}
		if err := s.catchUp(ctx, true); err != nil {
			if !s.retryAfter(ctx, "catch up", err, n) {
				return nil
			}
			n++
			continue
		}
		n = 1
		s.recovered()
	}
}

// applied is the largest change number the index applied.
func (s *Store) applied() int64 {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	return s.after
}

// Load reads every listing into the index; searches use it afterwards.
func (s *Store) Load(ctx context.Context) error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	start, begun, logged := s.writes.Load(), time.Now(), time.Now()
	if s.SnapshotPath != "" && s.feed == "" {
		feed, err := s.Engine.FeedID(ctx)
		if err != nil {
			return fmt.Errorf("search index: load: %w", err)
		}
		s.feed = feed
	}
	n := 0
	s.lazySort(true)
	defer s.lazySort(false)
	for {
		batch := s.batch
		docs, err := s.Engine.ListingChanges(ctx, s.after, nil, batch)
		if err != nil {
			// A read cut by the store deadline under load is likelier to
			// finish in half the rows.
			s.batch = max(minLoadBatch, batch/2)
			return fmt.Errorf("search index: load: %w", err)
		}
		s.batch = min(loadBatch, 2*batch)
		s.applyLocked(docs, false)
		n += len(docs)
		if len(docs) < batch {
			break
		}
		if time.Since(logged) > 5*time.Second {
			s.log.Info("search index: loading", "listings", n, "elapsed", time.Since(begun).Round(time.Millisecond))
			logged = time.Now()
		}
	}
	s.lazySort(false)
	// A transaction that took a number below the last one read and had
	// not committed yet: ask for the last numbers again until they show.
	now := time.Now()
	for seq := max(1, s.after-maxGaps+1); seq <= s.after; seq++ {
		s.gaps[seq] = now
	}
	if err := s.catchUpLocked(ctx, start); err != nil {
		return fmt.Errorf("search index: load: %w", err)
	}
	s.mu.RLock()
	held := s.ix.docs.n
	s.mu.RUnlock()
	s.ready.Store(true)
	s.loadNanos.Store(int64(time.Since(begun)))
	s.log.Info("search index: loaded", "listings", held, "elapsed", time.Since(begun).Round(time.Millisecond))
	return nil
}

// lazySort sets the index's lazySort; turned off, the words are sorted.
func (s *Store) lazySort(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ix.lazySort = on
	if !on {
		s.ix.sortWords()
		s.epoch++ // words a prefix missed are found now
	}
}

// catchUp applies the changes since the last catch-up: always when force,
// otherwise only when this process wrote since then or PollEvery passed.
func (s *Store) catchUp(ctx context.Context, force bool) error {
	w := s.writes.Load()
	if !force && (s.current(w) || s.synced.Load() >= w && s.saving.Load()) {
		// Current, or a snapshot is being written and this process did
		// not write since the last catch-up: the index as it is serves
		// (other processes' writes are found a few seconds later).
		return nil
	}
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	if !force && s.current(w) {
		return nil // another search caught up meanwhile
	}
	return s.catchUpLocked(ctx, s.writes.Load())
}

// current tells whether a catch-up started after the writes counted by w,
// and not longer than PollEvery ago.
func (s *Store) current(w uint64) bool {
	return s.synced.Load() >= w && time.Since(time.Unix(0, s.lastSync.Load())) < s.PollEvery
}

// catchUpLocked reads the changes past s.after (and the gaps); w is the
// write count before the first read. syncMu is held.
func (s *Store) catchUpLocked(ctx context.Context, w uint64) error {
	now := time.Now()
	also := make([]int64, 0, len(s.gaps))
	for seq, seen := range s.gaps {
		if now.Sub(seen) > gapTTL {
			delete(s.gaps, seq)
			continue
		}
		also = append(also, seq)
	}
	for {
		docs, err := s.Engine.ListingChanges(ctx, s.after, also, syncBatch)
		if err != nil {
			return fmt.Errorf("search index: catch up: %w", err)
		}
		s.applyLocked(docs, true)
		if len(docs) < syncBatch {
			break
		}
		also = nil
	}
	s.synced.Store(w)
	s.lastSync.Store(time.Now().UnixNano())
	return nil
}

// applyLocked puts docs (in change number order, some perhaps below
// s.after: gaps filled) into the index; with trackGaps, the numbers
// skipped on the way are asked for again later. syncMu is held.
func (s *Store) applyLocked(docs []store.IndexDoc, trackGaps bool) {
	if len(docs) == 0 {
		return
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range docs {
		delete(s.gaps, d.ChangeSeq)
		if d.ChangeSeq > s.after {
			if trackGaps {
				for seq := max(s.after+1, d.ChangeSeq-maxGaps); seq < d.ChangeSeq && len(s.gaps) < maxGaps; seq++ {
					s.gaps[seq] = now
				}
			}
			s.after = d.ChangeSeq
		}
	}
	s.ix.apply(docs)
	s.mark.Add(1)
}

// ChangeMark implements store.ChangeMarker: it moves whenever the index
// applied a change of any listing from the change feed, so the read
// cache's agents (store.Cache.GetAgent) are read again after a write by
// any process on the database.
func (s *Store) ChangeMark() uint64 { return s.mark.Load() }

// SearchAgents implements store.Catalogue from the index when it can.
func (s *Store) SearchAgents(ctx context.Context, q store.SearchQuery) (store.SearchPage, error) {
	cur, hasCursor, err := store.DecodeCursor(q.Cursor)
	if err != nil || q.Sort == store.SortName || q.Sort == store.SortUsed || len(q.Publishers) > 0 || !s.ready.Load() || s.retrying.Load() {
		s.passed.Add(1)
		return s.Engine.SearchAgents(ctx, q)
	}
	limit := store.NormalizeLimit(q.Limit)
	for attempt := range 2 {
		if err := s.catchUp(ctx, attempt > 0); err != nil {
			break
		}
		s.mu.RLock()
		hits, matches := s.ix.page(q, cur, hasCursor, limit)
		epoch, mark := s.epoch, s.mark.Load()
		s.mu.RUnlock()
		if matches >= 0 {
			s.counts.put(countKey(q), epoch, mark, matches)
		}
		page, ok, err := s.read(ctx, q, hits, limit)
		if err != nil {
			return store.SearchPage{}, err
		}
		if ok {
			s.answered.Add(1)
			return page, nil
		}
		// A listing of the page changed after the index read it: catch
		// up and look again.
	}
	s.passed.Add(1)
	return s.Engine.SearchAgents(ctx, q)
}

// TagFacets implements store.Catalogue from the index once it has
// loaded.
func (s *Store) TagFacets(ctx context.Context, q store.SearchQuery, limit int) ([]store.TagCount, error) {
	if len(q.Publishers) > 0 || !s.ready.Load() || s.retrying.Load() || s.catchUp(ctx, false) != nil {
		return s.Engine.TagFacets(ctx, q, limit)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.ix.tagCounts(q, store.NormalizeLimit(limit)), nil
}

// CountMatches implements store.MatchCounter: exactly, from the index's
// bitmaps (a union and an intersection, whatever the catalogue's size),
// once it has loaded; from the engine otherwise, and for the filters the
// index does not hold (publishers).
func (s *Store) CountMatches(ctx context.Context, q store.SearchQuery, upTo int) (int, bool, error) {
	if len(q.Publishers) > 0 || !s.ready.Load() || s.retrying.Load() || s.catchUp(ctx, false) != nil {
		mc, ok := s.Engine.(store.MatchCounter)
		if !ok {
			return 0, false, fmt.Errorf("search index: the engine cannot count a search's matches")
		}
		return mc.CountMatches(ctx, q, upTo)
	}
	key := countKey(q)
	s.mu.RLock()
	defer s.mu.RUnlock()
	if n, ok := s.counts.get(key, s.epoch, s.mark.Load()); ok {
		return n, true, nil
	}
	return s.ix.countMatches(q), true, nil
}

// countKey names what a search's count of matches depends on: its text
// and filters, not its cursor, limit, order or PublicOnly.
func countKey(q store.SearchQuery) string {
	return store.SearchKey(store.SearchQuery{Q: q.Q, Tags: q.Tags, Statuses: q.Statuses, Health: q.Health, Owner: q.Owner})
}

// countMemo keeps the match counts of the last text searches' pages
// (index.page counts them from the text's set it makes), so that the count
// the API asks for next (CountMatches) does not make that set again
// (BENCHMARKS.md "Memory at 100k listings", stop 40). A count serves only
// for the index (Store.epoch) and change mark it was counted at: any
// change applied since, or a new index, and it is counted again. Slots are chosen by the
// key's hash; a newer count takes the slot.
type countMemo struct {
	mu    sync.Mutex
	slots [countSlots]countSlot
}

const countSlots = 64

type countSlot struct {
	key         string
	epoch, mark uint64
	n           int
}

func countSlotOf(key string) int {
	h := uint32(2166136261) // FNV-1a
	for i := 0; i < len(key); i++ {
		h = (h ^ uint32(key[i])) * 16777619
	}
	return int(h % countSlots)
}

func (m *countMemo) put(key string, epoch, mark uint64, n int) {
	m.mu.Lock()
	m.slots[countSlotOf(key)] = countSlot{key: key, epoch: epoch, mark: mark, n: n}
	m.mu.Unlock()
}

func (m *countMemo) get(key string, epoch, mark uint64) (int, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if sl := &m.slots[countSlotOf(key)]; sl.key == key && sl.epoch == epoch && sl.mark == mark {
		return sl.n, true
	}
	return 0, false
}

// read reads the page's listings, from the row cache or the engine. ok is
// false when one of them is gone or changed since the index read it.
func (s *Store) read(ctx context.Context, q store.SearchQuery, hits []hit, limit int) (store.SearchPage, bool, error) {
	n := min(len(hits), limit)
	page := store.SearchPage{Listings: make([]store.Listing, n)}
	w, now := s.writes.Load(), time.Now()
	var missing []int64
	s.rows.mu.Lock()
	if s.rows.writes != w || s.rows.rows == nil {
		s.rows.rows, s.rows.writes, s.rows.bytes = map[int64]cachedRow{}, w, 0
	}
	for i, h := range hits[:n] {
		if e, ok := s.rows.rows[h.pos]; ok && s.RowTTL > 0 && e.seq == h.seq && now.Before(e.expires) && (e.full || q.PublicOnly) {
			page.Listings[i] = *e.l
		} else {
			missing = append(missing, h.pos)
		}
	}
	s.rows.mu.Unlock()
	if len(missing) > 0 {
		rows, err := s.Engine.ListingsAt(ctx, missing, q.PublicOnly)
		if err != nil {
			return store.SearchPage{}, false, fmt.Errorf("search index: read page: %w", err)
		}
		byPos := make(map[int64]*store.PosListing, len(rows))
		for i := range rows {
			byPos[rows[i].Pos] = &rows[i]
		}
		s.rows.mu.Lock()
		keep := s.RowTTL > 0 && s.rows.writes == w // no write since: what was read may serve
		for i, h := range hits[:n] {
			if page.Listings[i].Record.ID != "" {
				continue // from the cache
			}
			r := byPos[h.pos]
			if r == nil || r.ChangeSeq != h.seq {
				s.rows.mu.Unlock()
				return store.SearchPage{}, false, nil
			}
			page.Listings[i] = r.Listing
			if keep {
				s.rows.put(h.pos, cachedRow{l: &r.Listing, seq: r.ChangeSeq, full: !q.PublicOnly, expires: now.Add(s.RowTTL)})
			}
		}
		s.rows.mu.Unlock()
	}
	if len(hits) > limit {
		last := hits[limit-1]
		page.NextCursor = store.EncodeCursor(store.Cursor{Rank: last.rank, Pos: last.pos, Failing: last.failing, Stale: last.stale})
	}
	return page, true, nil
}

// Loaded tells whether the index has loaded and answers searches.
func (s *Store) Loaded() bool { return s.ready.Load() }

// Counts says how many listings the index holds and how many searches it
// answered or passed to the engine (for tests and metrics).
func (s *Store) Counts() (listings int, answered, passed uint64) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.ix.docs.n, s.answered.Load(), s.passed.Load()
}

// Collectors are the index's metrics: listings held, searches answered by
// the index and by the engine, the failed reads Run retried and whether
// it is retrying now.
func (s *Store) Collectors() []prometheus.Collector {
	count := func(pick func(listings int, answered, passed uint64) float64) func() float64 {
		return func() float64 { return pick(s.Counts()) }
	}
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "agentsite_search_index_listings",
			Help: "Listings the in-process search index holds.",
		}, count(func(n int, _, _ uint64) float64 { return float64(n) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "agentsite_search_index_load_seconds",
			Help: "How long the search index took to load at start (0 while it loads).",
		}, func() float64 { return time.Duration(s.loadNanos.Load()).Seconds() }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "agentsite_search_index_searches_total",
			Help:        "Searches, by what answered them: the in-process index, or the database (index loading, sort by name, a bad cursor).",
			ConstLabels: prometheus.Labels{"by": "index"},
		}, count(func(_ int, a, _ uint64) float64 { return float64(a) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "agentsite_search_index_searches_total",
			Help:        "Searches, by what answered them: the in-process index, or the database (index loading, sort by name, a bad cursor).",
			ConstLabels: prometheus.Labels{"by": "database"},
		}, count(func(_ int, _, p uint64) float64 { return float64(p) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "agentsite_search_index_retries_total",
			Help: "Failed reads of the store's change feed (loading or catching up) that the search index retried after a backoff.",
		}, func() float64 { return float64(s.retries.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "agentsite_search_index_retrying",
			Help: "1 while the search index's last read of the store failed and it waits to retry (searches use the database), else 0.",
		}, func() float64 {
			if s.retrying.Load() {
				return 1
			}
			return 0
		}),
	}
}

// The writes: each is the engine's, then counted, so the next search
// catches up first.

// UpsertRecord implements store.Catalogue.
func (s *Store) UpsertRecord(ctx context.Context, l store.Listing) error {
	defer s.writes.Add(1)
	return s.Engine.UpsertRecord(ctx, l)
}

// SetHostStatus implements store.Catalogue.
func (s *Store) SetHostStatus(ctx context.Context, hostPeerID, status string, lastSeen time.Time) (int, error) {
	defer s.writes.Add(1)
	return s.Engine.SetHostStatus(ctx, hostPeerID, status, lastSeen)
}

// SetHealth implements store.Catalogue.
func (s *Store) SetHealth(ctx context.Context, hostPeerID string, health map[string]agent.Health) (int, error) {
	defer s.writes.Add(1)
	return s.Engine.SetHealth(ctx, hostPeerID, health)
}

// ExpireListings implements store.Catalogue.
func (s *Store) ExpireListings(ctx context.Context, now time.Time) (int, error) {
	defer s.writes.Add(1)
	return s.Engine.ExpireListings(ctx, now)
}

// ExpireUnheard implements store.Catalogue.
func (s *Store) ExpireUnheard(ctx context.Context, before time.Time, self string) (int, error) {
	defer s.writes.Add(1)
	return s.Engine.ExpireUnheard(ctx, before, self)
}

// InBatch implements store.Batcher. The batch's writes go through its Tx
// straight to the engine; they are counted once the batch has ended
// (committed or not), so the next search catches up on them.
func (s *Store) InBatch(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	defer s.writes.Add(1)
	return s.Engine.InBatch(ctx, fn)
}

// InBatchWhole implements store.Batcher, counted as InBatch.
func (s *Store) InBatchWhole(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	defer s.writes.Add(1)
	return s.Engine.InBatchWhole(ctx, fn)
}

// CountListings implements store.Evictor when the engine does.
func (s *Store) CountListings(ctx context.Context) (int, error) {
	e, ok := s.Engine.(store.Evictor)
	if !ok {
		return 0, errNoEvictor
	}
	return e.CountListings(ctx)
}

// EvictListings implements store.Evictor when the engine does, counted
// as a write: the evicted listings' rows in the change feed read as
// tombstones (migration 0010), so the next search drops them from the
// index, and the row cache is emptied.
func (s *Store) EvictListings(ctx context.Context, n int) (int, error) {
	e, ok := s.Engine.(store.Evictor)
	if !ok {
		return 0, errNoEvictor
	}
	defer s.writes.Add(1)
	return e.EvictListings(ctx, n)
}

// EvictListingsFor is EvictListings weighing evidence (store.Evictor).
func (s *Store) EvictListingsFor(ctx context.Context, n int, firstHeard time.Time) (int, error) {
	e, ok := s.Engine.(store.Evictor)
	if !ok {
		return 0, errNoEvictor
	}
	defer s.writes.Add(1)
	return e.EvictListingsFor(ctx, n, firstHeard)
}

// errNoEvictor: the engine cannot evict listings.
var errNoEvictor = errors.New("search index: the engine cannot evict listings")
