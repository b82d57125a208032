package postgres

import (
	"context"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

var _ store.HeartbeatTx = batchTx{}

// UpsertNode implements store.HeartbeatTx: in the batch, undone alone if
// it fails (a savepoint, unless the batch is whole).
func (t batchTx) UpsertNode(ctx context.Context, n store.Node) error {
	return t.b.atomic(ctx, func(ctx context.Context, q querier) error { return upsertNode(ctx, q, n) })
}

// SetHostStatus implements store.HeartbeatTx.
func (t batchTx) SetHostStatus(ctx context.Context, hostPeerID, status string, lastSeen time.Time) (int, error) {
	var n int
	err := t.b.atomic(ctx, func(ctx context.Context, q querier) (err error) {
		n, err = setHostStatus(ctx, q, hostPeerID, status, lastSeen)
		return err
	})
	return n, err
}

// SetHealth implements store.HeartbeatTx.
func (t batchTx) SetHealth(ctx context.Context, hostPeerID string, health map[string]agent.Health) (int, error) {
	var n int
	err := t.b.atomic(ctx, func(ctx context.Context, q querier) (err error) {
		n, err = setHealth(ctx, q, hostPeerID, health)
		return err
	})
	return n, err
}
