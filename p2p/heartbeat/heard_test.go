package heartbeat

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/internal/waitfor"
)

// batchingCache records the batches HeardAll gets, and any heartbeat
// recorded on its own.
type batchingCache struct {
	fakeCache
	mu      sync.Mutex
	batches [][]agent.Heartbeat
	health  [][]map[string]agent.Health
	single  int
}

func (c *batchingCache) HeardAll(_ context.Context, beats []agent.Heartbeat, health []map[string]agent.Health) []error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.batches = append(c.batches, append([]agent.Heartbeat(nil), beats...))
	c.health = append(c.health, append([]map[string]agent.Health(nil), health...))
	return make([]error, len(beats))
}

func (c *batchingCache) NodeSeen(context.Context, agent.Heartbeat) error {
	c.mu.Lock()
	c.single++
	c.mu.Unlock()
	return nil
}

// TestHeardLoopRecordsAWindowAtOnce: heartbeats accepted together reach
// the cache in one HeardAll, in the order they came, with the health
// each carried; none is recorded on its own.
func TestHeardLoopRecordsAWindowAtOnce(t *testing.T) {
	c := &batchingCache{}
	n := New(Config{Store: c})
	loop := n.StartQueue()
	for i := range 5 {
		h := heard{beat: agent.Heartbeat{PeerID: fmt.Sprintf("peer-%d", i)}}
		if i == 2 {
			h.health = map[string]agent.Health{"a": {State: agent.HealthHealthy}}
		}
		n.heardq <- h // queued before the loop runs: one window
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); loop(ctx) }()
	waitfor.Until(t, 30*time.Second, "the batch", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.batches) > 0
	})
	cancel()
	<-done
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.batches) != 1 || len(c.batches[0]) != 5 || c.single != 0 {
		t.Fatalf("5 queued heartbeats: %d batches (first of %d), %d recorded alone; want one of 5", len(c.batches), len(c.batches[0]), c.single)
	}
	for i, hb := range c.batches[0] {
		if want := fmt.Sprintf("peer-%d", i); hb.PeerID != want {
			t.Fatalf("batch[%d] is %s, want %s (in order)", i, hb.PeerID, want)
		}
		if (c.health[0][i] != nil) != (i == 2) {
			t.Fatalf("batch[%d] health %v", i, c.health[0][i])
		}
	}
}
