package p2p

import (
	"context"
	"time"

	"github.com/agentsite/agentsite/agent"
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

func (c fakeCache) PutAll(ctx context.Context, recs []*agent.Record, envs [][]byte) ([]bool, []error) {
	return putEach(ctx, c.Put, recs, envs)
}

// putEach is PutAll made of put, record by record.
func putEach(ctx context.Context, put func(context.Context, *agent.Record, []byte) (bool, error), recs []*agent.Record, envs [][]byte) ([]bool, []error) {
	changed, errs := make([]bool, len(recs)), make([]error, len(recs))
	for i := range recs {
		changed[i], errs[i] = put(ctx, recs[i], envs[i])
	}
	return changed, errs
}
