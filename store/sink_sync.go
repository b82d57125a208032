package store

import (
	"context"
	"time"
)

// The Sink's part of incremental catalogue sync (p2p's Cache): pages of
// the change feed for peers, and this node's cursors in theirs.

// FeedID names this node's change feed.
func (s *Sink) FeedID(ctx context.Context) (string, error) { return s.Store.FeedID(ctx) }

// SyncChanges serves a page of the change feed for sync (SyncFeed), with
// the listings valid now.
func (s *Sink) SyncChanges(ctx context.Context, after int64, lo, hi string, limit int) ([][]byte, int64, bool, error) {
	return s.Store.SyncChanges(ctx, after, lo, hi, limit, s.now())
}

// SyncCursor is where this node got to in peer's feed for shard.
func (s *Sink) SyncCursor(ctx context.Context, peer string, shard int) (string, int64, bool, error) {
	return s.Store.SyncCursor(ctx, peer, shard)
}

// SetSyncCursor stores where this node got to in peer's feed for shard.
func (s *Sink) SetSyncCursor(ctx context.Context, peer string, shard int, feed string, after int64, complete bool) error {
	return s.Store.SetSyncCursor(ctx, peer, shard, feed, after, complete, s.now())
}

// PruneSyncCursors drops the cursors of peers not synced with since before.
func (s *Sink) PruneSyncCursors(ctx context.Context, before time.Time) (int, error) {
	return s.Store.PruneSyncCursors(ctx, before)
}
