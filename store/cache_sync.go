package store

import (
	"context"
	"time"
)

// FeedID implements SyncFeed, uncached.
func (c *Cache) FeedID(ctx context.Context) (string, error) { return c.next.FeedID(ctx) }

// SyncChanges implements SyncFeed, uncached: each sync page is asked for
// once.
func (c *Cache) SyncChanges(ctx context.Context, after int64, lo, hi string, limit int, now time.Time) ([][]byte, int64, bool, error) {
	return c.next.SyncChanges(ctx, after, lo, hi, limit, now)
}

// SyncCursor implements SyncFeed, uncached.
func (c *Cache) SyncCursor(ctx context.Context, peer string, shard int) (string, int64, bool, error) {
	return c.next.SyncCursor(ctx, peer, shard)
}

// SetSyncCursor implements SyncFeed; no cached read shows cursors.
func (c *Cache) SetSyncCursor(ctx context.Context, peer string, shard int, feed string, after int64, complete bool, at time.Time) error {
	return c.next.SetSyncCursor(ctx, peer, shard, feed, after, complete, at)
}

// PruneSyncCursors implements SyncFeed.
func (c *Cache) PruneSyncCursors(ctx context.Context, before time.Time) (int, error) {
	return c.next.PruneSyncCursors(ctx, before)
}

// Batcher is c as a Batcher when the Network it wraps runs transactions:
// the batch's writes invalidate the cached reads (listings and backends)
// once it has ended, committed or not. The Sink writes a sync page in one; a running node's
// bulk registration writes a chunk in one (cmd/agentsite gives the
// registry the read cache's Batcher), as an offline import does.
func (c *Cache) Batcher() (Batcher, bool) { return c.batcher() }

// batcher is Batcher.
func (c *Cache) batcher() (Batcher, bool) {
	b, ok := c.next.(Batcher)
	if !ok {
		return nil, false
	}
	return cacheBatcher{c: c, next: b}, true
}

// invalidateBatch moves the generations a batch's writes can change: the
// listings' and the backends' (a Tx writes both).
func (c *Cache) invalidateBatch() {
	c.gen.Add(1)
	c.bgen.Add(1)
}

type cacheBatcher struct {
	c    *Cache
	next Batcher
}

func (b cacheBatcher) InBatch(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error {
	defer b.c.invalidateBatch()
	return b.next.InBatch(ctx, fn)
}

func (b cacheBatcher) InBatchWhole(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error {
	defer b.c.invalidateBatch()
	return b.next.InBatchWhole(ctx, fn)
}
