package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentsite/agentsite/agent"
)

// The node's own capacity (--max-listings): the one bound on the
// size of the catalogue. When the catalogue is full, a new listing from the
// network makes room by evicting held ones, in an order that gives up what
// is worth least first:
//
//  1. listings of hosts never heard (no node row: no verified heartbeat),
//  2. then offline listings and tombstones,
//  3. then stale ones,
//
// each class in first-seen order (oldest first). A stale listing goes only
// for a new one with as much evidence: whose host and publisher this node
// has heard at least as long (Node.FirstHeard), so that a host heard for
// hours and briefly cut off keeps its listings against one that started
// heartbeating minutes ago; a stale listing whose host's node is offline
// has none. This node's own listings and the online listings of hosts it
// hears are never evicted: with nothing else left, the new listing is
// refused (ErrCatalogueFull) and nothing held is lost. An evicted listing is deleted (it leaves the search index
// through the change feed, migration 0010) and is taken again, like any
// new one, when it arrives later and there is room.

// Evictor is a catalogue that can count and evict its listings. Engines
// implement it; the search index (store/searchindex) and the read cache
// (Cache) pass it on, noting the write.
type Evictor interface {
	// HasAgent reports whether id is held (Catalogue.HasAgent).
	HasAgent(ctx context.Context, id string) (bool, error)
	// CountListings counts every listing held: local, network, tombstones.
	CountListings(ctx context.Context) (int, error)
	// EvictListings deletes at most n listings (n up to MaxEvictBatch) in
	// the eviction order above, never a local listing nor an online one
	// that is not a tombstone, and returns how many went. Fewer than n
	// means nothing else may be evicted now.
	EvictListings(ctx context.Context, n int) (int, error)
	// EvictListingsFor is EvictListings making room for listings of a
	// host first heard at firstHeard: stale listings of hosts heard since
	// earlier (more evidence) are kept, unless their node is offline. The
	// zero time weighs nothing (EvictListings). Only so many stale
	// listings are walked (a bound on the cost, as for hosts never
	// heard): fewer than n may go although more could.
	EvictListingsFor(ctx context.Context, n int, firstHeard time.Time) (int, error)
}

// DefaultMaxListings is --max-listings: the largest catalogue this
// node's targets are set for (search, index load and memory measured at a
// 1M catalogue, BENCHMARKS.md "Capacity"). Peers are adversaries: without a bound by default a node holds
// whatever the planet sends until its disk is full. An operator with room
// for more raises it; 0 turns the bound off.
const DefaultMaxListings = 1_000_000

// MaxEvictBatch bounds one EvictListings call: one transaction, well
// inside the store deadline.
const MaxEvictBatch = 1000

// ErrCatalogueFull: the catalogue is at the node's capacity and nothing
// held may be evicted for a new listing; the listing was not stored and
// nothing else changed. It is not a fault of the peer that relayed the
// record (p2p does not penalise it): the listing is taken when it comes
// again and there is room. Errors wrapping it have a CatalogueFull method,
// so that packages that do not import store can tell.
var ErrCatalogueFull error = catalogueFull{}

type catalogueFull struct{}

func (catalogueFull) Error() string       { return "catalogue full" }
func (catalogueFull) CatalogueFull() bool { return true }

// Capacity bounds the listings held to Max (the Sink asks it before it
// stores listings from the network: Put one, PutAll a page). It counts
// the catalogue once in a while (Recount) and tracks what it admits in
// between. Below nine tenths of Max (and the headroom) a listing costs
// nothing: each is counted as new, updates too, until the next count.
// Above, it looks each id up and counts only new ones; at Max it evicts
// what the new ones need, at least a batch (Headroom), so that eviction is
// one statement per batch of admissions, never a scan per insert. With
// nothing left to evict, that statement walks two empty indexes (they
// hold only what may go).
//
// The catalogue may pass Max by what the Capacity does not see between
// counts: this node's own listings (never refused), another process's
// writes, a page admitted but not written yet when the count ran.
type Capacity struct {
	Store Evictor
	Max   int // listings held at most; 0 or less: no bound
	// Headroom is how many listings one eviction frees at least (those it
	// is for included); 0: 1 % of Max, between 1 and MaxEvictBatch.
	Headroom int
	// Recount is how long a count is trusted (0: a minute).
	Recount time.Duration
	Now     func() time.Time // nil: time.Now

	mu        sync.Mutex
	held      int // listings held, as counted and admitted since
	countedAt time.Time
	counted   bool

	evicted, refused atomic.Uint64
}

func (c *Capacity) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func (c *Capacity) headroom() int {
	if c.Headroom > 0 {
		return min(c.Headroom, MaxEvictBatch)
	}
	return min(max(c.Max/100, 1), MaxEvictBatch)
}

// Admit makes room for the listing id, of a host first heard at
// firstHeard (its evidence: EvictListingsFor), before it is stored: nil
// when there is room, made by eviction if need be, or id is held already
// (an update is never refused); an error wrapping ErrCatalogueFull when
// nothing may be evicted for it. A nil Capacity, or one without Max,
// admits everything. It must not be called inside a store transaction: it
// may evict, in one of its own.
func (c *Capacity) Admit(ctx context.Context, id string, firstHeard time.Time) error {
	return c.AdmitAll(ctx, []string{id}, []time.Time{firstHeard})[0]
}

// AdmitAll is Admit for the ids of a page that is written after it (in
// one transaction), firstHeard[i] the evidence of ids[i]: room is made
// for the page's new ids at once, so that they compete with what is held,
// not with each other, those with most evidence first, and the ids for
// which none could be made get errors wrapping ErrCatalogueFull. errs[i]
// is ids[i]'s.
func (c *Capacity) AdmitAll(ctx context.Context, ids []string, firstHeard []time.Time) (errs []error) {
	errs = make([]error, len(ids))
	if c == nil || c.Max <= 0 || len(ids) == 0 {
		return errs
	}
	fail := func(err error) []error {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	recount := c.Recount
	if recount <= 0 {
		recount = time.Minute
	}
	if !c.counted || now.Sub(c.countedAt) >= recount {
		if err := c.count(ctx); err != nil {
			return fail(err)
		}
		c.countedAt, c.counted = now, true
	}
	if c.held+len(ids) < c.Max-max(c.headroom(), c.Max/10) {
		c.held += len(ids)
		return errs
	}
	var fresh []int // the new ids, each once
	seen := make(map[string]bool, len(ids))
	for i, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		known, err := c.Store.HasAgent(ctx, id)
		if err != nil {
			errs[i] = fmt.Errorf("look up agent %s: %w", id, err)
			continue
		}
		if !known {
			fresh = append(fresh, i)
		}
	}
	if len(fresh) == 0 {
		return errs
	}
	// Most evidence (first heard earliest) first: they take the room
	// first, and what is evicted for the page as a whole (the headroom)
	// is what even its least evidence outranks.
	evidence := func(i int) time.Time {
		if i < len(firstHeard) {
			return firstHeard[i]
		}
		return time.Time{}
	}
	slices.SortStableFunc(fresh, func(a, b int) int { return evidence(a).Compare(evidence(b)) })
	short := time.Time{} // an eviction bound that found nothing more to evict
	shortSet := false
	evict := func(want int, bound time.Time) error {
		if shortSet && !bound.Before(short) {
			return nil // a bound as strict or stricter already came up short
		}
		for want > 0 {
			n := min(want, MaxEvictBatch)
			got, err := c.Store.EvictListingsFor(ctx, n, bound)
			if err != nil {
				return fmt.Errorf("evict listings to make room: %w", err)
			}
			c.evicted.Add(uint64(got))
			c.held -= got
			want -= got
			if got < n {
				short, shortSet = bound, true
				return nil
			}
		}
		return nil
	}
	if over := c.held + len(fresh) - c.Max; over > 0 {
		if err := evict(max(over, c.headroom()), evidence(fresh[len(fresh)-1])); err != nil {
			return fail(err)
		}
	}
	for k, i := range fresh {
		if c.held >= c.Max {
			// More room only from what this id's evidence outranks, and
			// only for the ids of the page with as much evidence.
			group := 1
			for _, j := range fresh[k+1:] {
				if !evidence(j).Equal(evidence(i)) {
					break
				}
				group++
			}
			if err := evict(group+c.held-c.Max, evidence(i)); err != nil {
				return fail(err)
			}
		}
		if c.held >= c.Max {
			c.refused.Add(1)
			errs[i] = fmt.Errorf("%w: %d listings held, the node's capacity (--max-listings) is %d, and none may be evicted for this one (this node's own listings, online ones and those of hosts heard longer are kept)",
				ErrCatalogueFull, c.held, c.Max)
			continue
		}
		c.held++
	}
	return errs
}

func (c *Capacity) count(ctx context.Context) error {
	n, err := c.Store.CountListings(ctx)
	if err != nil {
		return fmt.Errorf("count listings: %w", err)
	}
	c.held = n
	return nil
}

// Counts is how many listings the Capacity evicted and refused.
func (c *Capacity) Counts() (evicted, refused uint64) {
	return c.evicted.Load(), c.refused.Load()
}

// Collectors are the capacity's metrics: the bound, and the listings
// evicted and refused for it.
func (c *Capacity) Collectors() []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "agentsite_catalogue_max_listings",
			Help: "The node's capacity in listings (--max-listings); 0: no bound.",
		}, func() float64 { return float64(max(c.Max, 0)) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "agentsite_catalogue_evicted_total",
			Help: "Listings deleted to make room for new ones at --max-listings (never-heard hosts first, then offline, then stale).",
		}, func() float64 { return float64(c.evicted.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "agentsite_catalogue_refused_total",
			Help: "New network listings refused at --max-listings because nothing held could be evicted (own and online listings are kept).",
		}, func() float64 { return float64(c.refused.Load()) }),
	}
}

// errNoEvictor: the Cache wraps a Network that cannot evict.
var errNoEvictor = errors.New("store: the catalogue cannot evict listings")

// CountListings implements Evictor: a read, passed through.
func (c *Cache) CountListings(ctx context.Context) (int, error) {
	e, ok := c.next.(Evictor)
	if !ok {
		return 0, errNoEvictor
	}
	return e.CountListings(ctx)
}

// EvictListings implements Evictor and invalidates cached reads.
func (c *Cache) EvictListings(ctx context.Context, n int) (int, error) {
	e, ok := c.next.(Evictor)
	if !ok {
		return 0, errNoEvictor
	}
	got, err := e.EvictListings(ctx, n)
	c.gen.Add(1)
	return got, err
}

// EvictListingsFor implements Evictor and invalidates cached reads.
func (c *Cache) EvictListingsFor(ctx context.Context, n int, firstHeard time.Time) (int, error) {
	e, ok := c.next.(Evictor)
	if !ok {
		return 0, errNoEvictor
	}
	got, err := e.EvictListingsFor(ctx, n, firstHeard)
	c.gen.Add(1)
	return got, err
}

// EvictListingsFor implements Evictor when the Network does.
func (c Composed) EvictListingsFor(ctx context.Context, n int, firstHeard time.Time) (int, error) {
	e, ok := c.Network.(Evictor)
	if !ok {
		return 0, errNoEvictor
	}
	return e.EvictListingsFor(ctx, n, firstHeard)
}

// CountListings implements Evictor when the Network does.
func (c Composed) CountListings(ctx context.Context) (int, error) {
	e, ok := c.Network.(Evictor)
	if !ok {
		return 0, errNoEvictor
	}
	return e.CountListings(ctx)
}

// EvictListings implements Evictor when the Network does.
func (c Composed) EvictListings(ctx context.Context, n int) (int, error) {
	e, ok := c.Network.(Evictor)
	if !ok {
		return 0, errNoEvictor
	}
	return e.EvictListings(ctx, n)
}

// admitAll is Capacity.AdmitAll for the records of a page that are not
// this node's own, each with its evidence at now (nodes: the rows of the
// page's hosts and publishers).
func (s *Sink) admitAll(ctx context.Context, recs []*agent.Record, nodes map[string]Node, now time.Time) []error {
	errs := make([]error, len(recs))
	if s.Capacity == nil {
		return errs
	}
	var ids []string
	var since []time.Time
	var at []int
	for i, rec := range recs {
		if rec.HostPeerID() == s.SelfID && rec.Publisher == s.SelfID {
			continue
		}
		ids, at = append(ids, rec.ID), append(at, i)
		since = append(since, s.evidence(rec, nodes, now))
	}
	for j, err := range s.Capacity.AdmitAll(ctx, ids, since) {
		errs[at[j]] = err
	}
	return errs
}
