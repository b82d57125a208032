package store

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/agentsite/agentsite/agent"
)

// Cache wraps a Network and keeps the answers of the read-heavy portal
// queries (SearchAgents, TagFacets, Stats, ListTags, RecentAgents, CountNodes) for a short time.
// Every write that can change them (UpsertRecord, SetHostStatus, SetHealth,
// ExpireListings, ExpireUnheard, UpsertNode) bumps a generation counter, and an entry of an older
// generation is never served, so the cache cannot show a listing state the
// store has already moved past; the TTL only bounds how long an unchanged
// answer is reused. Concurrent misses for the same query share one store
// call. The other reads pass straight through.
//
// It wraps Network only, and spells out every method of it rather than
// embedding it: a method added to Network does not compile here until it
// says whether it invalidates. The other roles do not touch listings; see
// Composed for a whole Store with the cache in it. Of them only Backends
// is cached, by a wrapper its Backends method makes (cache_backends.go):
// the runtime reads one at every turn; and Conversations, whose wrapper
// keeps conversations' newest messages, checked at every read
// (cache_messages.go).
//
// Why: a text search ranks every matching row; on the 2-core machine that
// capped Postgres at ~600 searches/s (BENCHMARKS.md), while the same few
// queries arrive over and over from the live search box.
//
// Memory: the entries are bounded in number (max) and in bytes (an
// estimate of what each value holds, CacheMaxBytes). A full cache first
// drops what can no longer be served (older generations, past their TTL),
// and everything if that frees less than half. Before this bound the
// entries of 2,000 distinct searches stayed in the map, each a page of
// listings with their envelopes, until max (10,000) was reached: the
// node's RSS grew from 37 to 340 MB under a distinct-query load.
type Cache struct {
	next     Network
	ttl      time.Duration
	max      int
	maxBytes int
	gen      atomic.Uint64
	group    singleflight.Group

	mu      sync.Mutex
	entries map[string]cacheEntry
	bytes   int // sum of the entries' sizes

	// agents is the LRU of listings GetAgent read (see GetAgent).
	agents idLRU[Listing]
	// backends is the LRU of local agents' backends (see Backends), valid
	// while bgen, moved by every write of a backend through the cache, is
	// the one it was read at.
	backends idLRU[agent.Backend]
	bgen     atomic.Uint64
	// tails holds conversations' newest messages (see Conversations).
	tails messageTails
}

type cacheEntry struct {
	gen     uint64
	expires time.Time
	value   any
	size    int
}

// CacheMaxBytes bounds the estimated size of what a Cache holds: ~150
// encoded pages of 20 listings, plenty for the queries that repeat within
// the TTL (a second on a node). It was 24 MiB before the search index
// (store/searchindex) made a miss cheap, then 8 MiB; under a load of
// distinct queries (none repeats, ~2,700 a second) what it holds is a
// tenth of a second of answers that will not be asked again, live heap
// that the soft memory limit turns into RSS (BENCHMARKS.md "Memory at
// 100k listings", stop 39).
const CacheMaxBytes = 4 << 20

var _ Network = (*Cache)(nil)

// NewCache wraps n; ttl bounds reuse, max bounds the number of entries.
func NewCache(n Network, ttl time.Duration, max int) *Cache {
	c := &Cache{next: n, ttl: ttl, max: max, maxBytes: CacheMaxBytes, entries: map[string]cacheEntry{}}
	feed, _ := n.(ChangeMarker)
	c.agents = newIDLRU[Listing](AgentCacheMax, AgentCacheTTL, feed)
	c.backends = newIDLRU[agent.Backend](AgentCacheMax, AgentCacheTTL, feed)
	return c
}

// UpsertRecord implements Network and invalidates cached reads.
func (c *Cache) UpsertRecord(ctx context.Context, l Listing) error {
	err := c.next.UpsertRecord(ctx, l)
	c.gen.Add(1)
	return err
}

// UpsertNode implements Network and invalidates cached reads (Stats counts
// nodes).
func (c *Cache) UpsertNode(ctx context.Context, n Node) error {
	err := c.next.UpsertNode(ctx, n)
	c.gen.Add(1)
	return err
}

// SetHostStatus implements Network and invalidates cached reads.
func (c *Cache) SetHostStatus(ctx context.Context, hostPeerID, status string, lastSeen time.Time) (int, error) {
	n, err := c.next.SetHostStatus(ctx, hostPeerID, status, lastSeen)
	if n > 0 || err != nil {
		c.gen.Add(1)
	}
	return n, err
}

// SetHealth implements Network and invalidates cached reads (search
// filters and ranks on health).
func (c *Cache) SetHealth(ctx context.Context, hostPeerID string, health map[string]agent.Health) (int, error) {
	n, err := c.next.SetHealth(ctx, hostPeerID, health)
	if n > 0 || err != nil {
		c.gen.Add(1)
	}
	return n, err
}

// ExpireListings implements Network and invalidates cached reads.
func (c *Cache) ExpireListings(ctx context.Context, now time.Time) (int, error) {
	n, err := c.next.ExpireListings(ctx, now)
	if n > 0 || err != nil {
		c.gen.Add(1)
	}
	return n, err
}

// ExpireUnheard implements Network and invalidates cached reads.
func (c *Cache) ExpireUnheard(ctx context.Context, before time.Time, self string) (int, error) {
	n, err := c.next.ExpireUnheard(ctx, before, self)
	if n > 0 || err != nil {
		c.gen.Add(1)
	}
	return n, err
}

// SearchAgents implements Network from the cache when it can. Callers must
// treat the returned listings as read-only (they may be shared).
func (c *Cache) SearchAgents(ctx context.Context, q SearchQuery) (SearchPage, error) {
	v, err := c.get(ctx, "search\x00"+SearchKey(q), func(ctx context.Context) (any, error) { return c.next.SearchAgents(ctx, q) })
	if err != nil {
		return SearchPage{}, err
	}
	return v.(SearchPage), nil
}

// SearchKey is a string that tells search queries apart: two queries with
// the same key have the same answer.
func SearchKey(q SearchQuery) string {
	return fmt.Sprintf("%q\x00%q\x00%q\x00%q\x00%q\x00%d\x00%q\x00%q\x00%v\x00%q",
		q.Q, q.Tags, q.Statuses, q.Health, q.Owner, NormalizeLimit(q.Limit), q.Cursor, q.Sort, q.PublicOnly, q.Publishers)
}

// Memo is the cache for a value derived from Network reads, such as the
// encoded bytes of an API answer: it returns the value kept under key, or
// calls load with the wrapped (uncached) Network and keeps what it
// returns, under the same rules as the cached reads (every write
// invalidates it, concurrent misses share one load). A []byte value is
// counted by its length against CacheMaxBytes. Callers must treat the
// value as read-only.
func (c *Cache) Memo(ctx context.Context, key string, load func(ctx context.Context, n Network) (any, error)) (any, error) {
	return c.get(ctx, "memo\x00"+key, func(ctx context.Context) (any, error) { return load(ctx, c.next) })
}

// TagFacets implements Network from the cache when it can: keyed by every
// field of q it depends on (not cursor, limit or sort) and by limit, and
// dropped by any write like the other cached reads.
func (c *Cache) TagFacets(ctx context.Context, q SearchQuery, limit int) ([]TagCount, error) {
	key := "facets\x00" + SearchKey(SearchQuery{Q: q.Q, Tags: q.Tags, Statuses: q.Statuses, Health: q.Health, Owner: q.Owner, Publishers: q.Publishers, Limit: limit})
	v, err := c.get(ctx, key, func(ctx context.Context) (any, error) { return c.next.TagFacets(ctx, q, limit) })
	if err != nil {
		return nil, err
	}
	return v.([]TagCount), nil
}

// Stats implements Network from the cache when it can.
func (c *Cache) Stats(ctx context.Context) (Stats, error) {
	v, err := c.get(ctx, "stats", func(ctx context.Context) (any, error) { return c.next.Stats(ctx) })
	if err != nil {
		return Stats{}, err
	}
	return v.(Stats), nil
}

// ListTags implements Network from the cache when it can.
func (c *Cache) ListTags(ctx context.Context, limit int) ([]TagCount, error) {
	v, err := c.get(ctx, fmt.Sprintf("tags\x00%d", limit), func(ctx context.Context) (any, error) { return c.next.ListTags(ctx, limit) })
	if err != nil {
		return nil, err
	}
	return v.([]TagCount), nil
}

// RecentAgents implements Network from the cache when it can.
func (c *Cache) RecentAgents(ctx context.Context, limit int) ([]Listing, error) {
	v, err := c.get(ctx, fmt.Sprintf("recent\x00%d", limit), func(ctx context.Context) (any, error) { return c.next.RecentAgents(ctx, limit) })
	if err != nil {
		return nil, err
	}
	return v.([]Listing), nil
}

// GetAgent implements Network from a bounded LRU of listings by id (see
// idLRU): every chat turn reads its agent, on the node the turn
// entered and on the node that hosts the agent, and reading it from the
// database was 6 % and 12 % of their CPU. Callers must treat the listing
// as read-only (it may be shared).
func (c *Cache) GetAgent(ctx context.Context, id string) (Listing, error) {
	gen, mark := c.gen.Load(), c.agents.mark()
	if l, ok := c.agents.get(id, gen, mark, time.Now()); ok {
		return l, nil
	}
	l, err := c.next.GetAgent(ctx, id)
	if err == nil {
		c.agents.put(id, l, gen, mark, time.Now())
	}
	return l, err
}

// CountByStatus implements Network, uncached (read at metrics scrapes).
func (c *Cache) CountByStatus(ctx context.Context) (map[string]int, error) {
	return c.next.CountByStatus(ctx)
}

// ListLocal implements Network, uncached.
func (c *Cache) ListLocal(ctx context.Context) ([]Listing, error) {
	return c.next.ListLocal(ctx)
}

// LocalRefs implements Network, uncached: the timers read each page once.
func (c *Cache) LocalRefs(ctx context.Context, q LocalQuery) ([]LocalRef, error) {
	return c.next.LocalRefs(ctx, q)
}

// CountLocal implements Network, uncached: it is one index count.
func (c *Cache) CountLocal(ctx context.Context) (LocalCount, error) {
	return c.next.CountLocal(ctx)
}

// CatalogueEnvelopes implements Network, uncached: each sync page is asked
// for once.
func (c *Cache) CatalogueEnvelopes(ctx context.Context, after int64, tag string, limit int, now time.Time) ([][]byte, int64, error) {
	return c.next.CatalogueEnvelopes(ctx, after, tag, limit, now)
}

// ListNodes implements Network, uncached.
func (c *Cache) ListNodes(ctx context.Context, q NodeQuery) (NodePage, error) {
	return c.next.ListNodes(ctx, q)
}

// SharedNodeNames implements Network, uncached.
func (c *Cache) SharedNodeNames(ctx context.Context, names []string) (map[string]bool, error) {
	return c.next.SharedNodeNames(ctx, names)
}

// GetNodes implements Network, uncached.
func (c *Cache) GetNodes(ctx context.Context, peerIDs []string) ([]Node, error) {
	return c.next.GetNodes(ctx, peerIDs)
}

// CountNodes implements Network from the cache when it can (the front
// page asks on every visit).
func (c *Cache) CountNodes(ctx context.Context) (map[string]int, error) {
	v, err := c.get(ctx, "nodecounts", func(ctx context.Context) (any, error) { return c.next.CountNodes(ctx) })
	if err != nil {
		return nil, err
	}
	return v.(map[string]int), nil
}

// TouchNodes implements Network and invalidates cached reads.
func (c *Cache) TouchNodes(ctx context.Context, seen map[string]time.Time) error {
	err := c.next.TouchNodes(ctx, seen)
	c.gen.Add(1)
	return err
}

// LocalNames implements Network, uncached (the heartbeat's, once a round).
func (c *Cache) LocalNames(ctx context.Context, ids []string) (map[string]string, error) {
	return c.next.LocalNames(ctx, ids)
}

// HasAgent implements Network, uncached (the Sink's quota: a write follows).
func (c *Cache) HasAgent(ctx context.Context, id string) (bool, error) {
	return c.next.HasAgent(ctx, id)
}

// CountPublished implements Network, uncached (the Sink's quota).
func (c *Cache) CountPublished(ctx context.Context, publisher string, limit int) (int, error) {
	return c.next.CountPublished(ctx, publisher, limit)
}

// CountHosted implements Network, uncached (heartbeats).
func (c *Cache) CountHosted(ctx context.Context, hostPeerID string, limit int) (int, error) {
	return c.next.CountHosted(ctx, hostPeerID, limit)
}

// get returns a fresh entry of the current generation, or loads one (once
// for all concurrent callers) and keeps it if no write happened meanwhile.
func (c *Cache) get(ctx context.Context, key string, load func(context.Context) (any, error)) (any, error) {
	gen := c.gen.Load()
	now := time.Now()
	c.mu.Lock()
	e, ok := c.entries[key]
	c.mu.Unlock()
	if ok && e.gen == gen && now.Before(e.expires) {
		return e.value, nil
	}
	v, err, _ := c.group.Do(fmt.Sprintf("%d\x00%s", gen, key), func() (any, error) {
		// Detached from one caller's cancellation: others share the result.
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		v, err := load(lctx)
		if err != nil {
			return nil, err
		}
		if c.gen.Load() == gen {
			c.put(key, cacheEntry{gen: gen, expires: time.Now().Add(c.ttl), value: v, size: sizeOf(v)})
		}
		return v, nil
	})
	return v, err
}

// put keeps e under key within the bounds (see Cache).
func (c *Cache) put(key string, e cacheEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.entries[key]; ok {
		c.bytes -= old.size
		delete(c.entries, key)
	}
	if e.size > c.maxBytes/4 {
		return // one answer may not push the others out
	}
	if len(c.entries) >= c.max || c.bytes+e.size > c.maxBytes {
		gen, now, before := c.gen.Load(), time.Now(), c.bytes
		for k, old := range c.entries {
			if old.gen != gen || !now.Before(old.expires) {
				c.bytes -= old.size
				delete(c.entries, k)
			}
		}
		if len(c.entries) >= c.max/2 || c.bytes > before/2 {
			clear(c.entries)
			c.bytes = 0
		}
	}
	c.entries[key] = e
	c.bytes += e.size
}

// Len returns how many entries the cache holds and their estimated size in
// bytes (for tests and metrics).
func (c *Cache) Len() (entries, bytes int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries), c.bytes
}

// sizeOf estimates the bytes a cached value keeps alive.
func sizeOf(v any) int {
	const overhead = 256
	switch v := v.(type) {
	case []byte:
		return overhead + len(v)
	case SearchPage:
		n := overhead + len(v.NextCursor)
		for i := range v.Listings {
			n += ListingSize(&v.Listings[i])
		}
		return n
	case []Listing:
		n := overhead
		for i := range v {
			n += ListingSize(&v[i])
		}
		return n
	case []TagCount:
		return overhead + 48*len(v)
	}
	return overhead
}

// ListingSize estimates the bytes a listing keeps alive: its variable-length parts
// and a fixed part for the rest.
func ListingSize(l *Listing) int {
	r := &l.Record
	n := 512 + len(l.Envelope) + len(l.PublicJSON) + len(r.Description) + len(r.Name) + len(r.DisplayName)
	for _, t := range r.Tags {
		n += 16 + len(t)
	}
	for _, s := range r.Skills {
		n += 64 + len(s.ID) + len(s.Name) + len(s.Description)
		for _, ex := range s.Examples {
			n += 16 + len(ex)
		}
	}
	return n + 128*len(r.Endpoints)
}
