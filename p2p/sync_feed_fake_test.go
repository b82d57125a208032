package p2p

import (
	"context"
	"time"
)

// fakeCache's change feed is empty and keeps no cursors.

func (fakeCache) FeedID(context.Context) (string, error) { return "fake", nil }
func (fakeCache) SyncChanges(_ context.Context, after int64, _, _ string, _ int) ([][]byte, int64, bool, error) {
	return [][]byte{}, after, false, nil
}
func (fakeCache) SyncCursor(context.Context, string, int) (string, int64, bool, error) {
	return "", 0, false, nil
}
func (fakeCache) SetSyncCursor(context.Context, string, int, string, int64, bool) error { return nil }
func (fakeCache) PruneSyncCursors(context.Context, time.Time) (int, error)              { return 0, nil }
