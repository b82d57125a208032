package sqlite

import (
	"context"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

var _ store.HeartbeatTx = batchTx{}

// UpsertNode implements store.HeartbeatTx: in the batch, undone alone if
// it fails.
func (t batchTx) UpsertNode(ctx context.Context, n store.Node) error {
	return t.b.atomic(ctx, func(ctx context.Context, tx execer) error { return upsertNode(ctx, tx, n) })
}

// SetHostStatus implements store.HeartbeatTx.
func (t batchTx) SetHostStatus(ctx context.Context, hostPeerID, status string, lastSeen time.Time) (int, error) {
	var n int
	err := t.b.atomic(ctx, func(ctx context.Context, tx execer) (err error) {
		n, err = setHostStatus(ctx, tx, hostPeerID, status, lastSeen)
		return err
	})
	return n, err
}

// SetHealth implements store.HeartbeatTx.
func (t batchTx) SetHealth(ctx context.Context, hostPeerID string, health map[string]agent.Health) (int, error) {
	var n int
	err := t.b.atomic(ctx, func(ctx context.Context, tx execer) (err error) {
		n, err = setHealth(ctx, tx, hostPeerID, health)
		return err
	})
	return n, err
}
