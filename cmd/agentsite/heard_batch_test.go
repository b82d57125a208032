package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/p2p"
	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/store/postgres"
	"github.com/agentsite/agentsite/store/postgres/pgtest"
	"github.com/agentsite/agentsite/store/sqlite"
)

// The store's Sink is what p2p records heartbeats through, many at once.
var _ p2p.HeartbeatBatcher = (*store.Sink)(nil)

// heardEngine is a store engine that counts the heartbeat writes that
// reach it on their own (each a transaction) and the batches.
type heardEngine interface {
	store.Network
	store.Batcher
}

type heardCounting struct {
	heardEngine
	single, batches atomic.Int64
}

func (c *heardCounting) UpsertNode(ctx context.Context, n store.Node) error {
	c.single.Add(1)
	return c.heardEngine.UpsertNode(ctx, n)
}

func (c *heardCounting) SetHostStatus(ctx context.Context, host, status string, at time.Time) (int, error) {
	c.single.Add(1)
	return c.heardEngine.SetHostStatus(ctx, host, status, at)
}

func (c *heardCounting) SetHealth(ctx context.Context, host string, h map[string]agent.Health) (int, error) {
	c.single.Add(1)
	return c.heardEngine.SetHealth(ctx, host, h)
}

func (c *heardCounting) InBatch(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	c.batches.Add(1)
	return c.heardEngine.InBatch(ctx, fn)
}

// TestHeartbeatsRecordedInOneTransaction: on both engines, the changed
// heartbeats of a window (ten nodes heard for the first time, with their
// agents' health) are written in one transaction, none on its own; the
// same heartbeats again change nothing and write nothing. Before, each
// was a node upsert and a host status update of its own (and a health
// update when it carried health).
func TestHeartbeatsRecordedInOneTransaction(t *testing.T) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	engines := map[string]func(t *testing.T) heardEngine{
		"sqlite": func(t *testing.T) heardEngine {
			db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "heard.db"), logger)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = db.Close() })
			return db
		},
		"postgres": func(t *testing.T) heardEngine {
			db, err := postgres.Open(t.Context(), pgtest.NewDatabase(t), logger)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = db.Close() })
			return db
		},
	}
	for name, open := range engines {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			eng := &heardCounting{heardEngine: open(t)}
			sink := &store.Sink{Store: eng, SelfID: "self"}
			now := time.Now().UTC()
			var beats []agent.Heartbeat
			var health []map[string]agent.Health
			for i := range 10 {
				beats = append(beats, agent.Heartbeat{
					PeerID: fmt.Sprintf("peer-%02d", i), Version: "test", SentAt: now, IntervalMS: 10_000,
					Addrs: []string{fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", 4000+i)},
				})
				var h map[string]agent.Health
				if i%2 == 0 {
					h = map[string]agent.Health{fmt.Sprintf("agent-of-%02d", i): {State: agent.HealthHealthy, SuccessRate: 1}}
				}
				health = append(health, h)
			}
			for i, err := range sink.HeardAll(ctx, beats, health) {
				if err != nil {
					t.Fatalf("heartbeat %d: %v", i, err)
				}
			}
			if s, b := eng.single.Load(), eng.batches.Load(); s != 0 || b != 1 {
				t.Fatalf("ten changed heartbeats: %d writes on their own and %d transactions; want 0 and 1", s, b)
			}
			counts, err := eng.CountNodes(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if counts[store.StatusOnline] != 10 {
				t.Fatalf("nodes by status after the batch: %v; want 10 online", counts)
			}
			for i, err := range sink.HeardAll(ctx, beats, make([]map[string]agent.Health, len(beats))) {
				if err != nil {
					t.Fatalf("heartbeat %d again: %v", i, err)
				}
			}
			if s, b := eng.single.Load(), eng.batches.Load(); s != 0 || b != 1 {
				t.Fatalf("the same heartbeats again: %d writes on their own and %d transactions; want none", s, b-1)
			}
		})
	}
}
