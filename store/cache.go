package store

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/agentsite/agentsite/agent"
)

// Cache wraps a Network and keeps the answers of the read-heavy portal
// queries (SearchAgents, TagFacets, Stats, ListTags, RecentAgents) for a short time.
// Every write that can change them (UpsertRecord, SetHostStatus, SetHealth,
// ExpireListings, UpsertNode) bumps a generation counter, and an entry of an older
// generation is never served, so the cache cannot show a listing state the
// store has already moved past; the TTL only bounds how long an unchanged
// answer is reused. Concurrent misses for the same query share one store
// call. The other reads pass straight through.
//
// It wraps Network only, and spells out every method of it rather than
// embedding it: a method added to Network does not compile here until it
// says whether it invalidates. The other roles do not touch listings; see
// Composed for a whole Store with the cache in it.
//
// Why: a text search ranks every matching row; on the 2-core machine that
// capped Postgres at ~600 searches/s (BENCHMARKS.md), while the same few
// queries arrive over and over from the live search box.
type Cache struct {
	next  Network
	ttl   time.Duration
	max   int
	gen   atomic.Uint64
	group singleflight.Group

	mu      sync.Mutex
	entries map[string]cacheEntry
}

type cacheEntry struct {
	gen     uint64
	expires time.Time
	value   any
}

var _ Network = (*Cache)(nil)

// NewCache wraps n; ttl bounds reuse, max bounds the number of entries.
func NewCache(n Network, ttl time.Duration, max int) *Cache {
	return &Cache{next: n, ttl: ttl, max: max, entries: map[string]cacheEntry{}}
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

// SearchAgents implements Network from the cache when it can. Callers must
// treat the returned listings as read-only (they may be shared).
func (c *Cache) SearchAgents(ctx context.Context, q SearchQuery) (SearchPage, error) {
	key := fmt.Sprintf("search\x00%s\x00%s\x00%s\x00%s\x00%s\x00%d\x00%s\x00%s",
		q.Q, strings.Join(q.Tags, ","), strings.Join(q.Statuses, ","), strings.Join(q.Health, ","), q.Owner, NormalizeLimit(q.Limit), q.Cursor, q.Sort)
	v, err := c.get(ctx, key, func(ctx context.Context) (any, error) { return c.next.SearchAgents(ctx, q) })
	if err != nil {
		return SearchPage{}, err
	}
	return v.(SearchPage), nil
}

// TagFacets implements Network from the cache when it can: keyed by every
// field of q it depends on (not cursor, limit or sort) and by limit, and
// dropped by any write like the other cached reads.
func (c *Cache) TagFacets(ctx context.Context, q SearchQuery, limit int) ([]TagCount, error) {
	key := fmt.Sprintf("facets\x00%s\x00%s\x00%s\x00%s\x00%s\x00%d",
		q.Q, strings.Join(q.Tags, ","), strings.Join(q.Statuses, ","), strings.Join(q.Health, ","), q.Owner, NormalizeLimit(limit))
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

// GetAgent implements Network, uncached: a listing page must show the
// listing as stored.
func (c *Cache) GetAgent(ctx context.Context, id string) (Listing, error) {
	return c.next.GetAgent(ctx, id)
}

// CountByStatus implements Network, uncached (read at metrics scrapes).
func (c *Cache) CountByStatus(ctx context.Context) (map[string]int, error) {
	return c.next.CountByStatus(ctx)
}

// ListLocal implements Network, uncached.
func (c *Cache) ListLocal(ctx context.Context) ([]Listing, error) {
	return c.next.ListLocal(ctx)
}

// CatalogueEnvelopes implements Network, uncached: each sync page is asked
// for once.
func (c *Cache) CatalogueEnvelopes(ctx context.Context, after int64, tag string, limit int, now time.Time) ([][]byte, int64, error) {
	return c.next.CatalogueEnvelopes(ctx, after, tag, limit, now)
}

// ListNodes implements Network, uncached.
func (c *Cache) ListNodes(ctx context.Context) ([]Node, error) {
	return c.next.ListNodes(ctx)
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
			c.mu.Lock()
			if len(c.entries) >= c.max {
				clear(c.entries)
			}
			c.entries[key] = cacheEntry{gen: gen, expires: time.Now().Add(c.ttl), value: v}
			c.mu.Unlock()
		}
		return v, nil
	})
	return v, err
}
