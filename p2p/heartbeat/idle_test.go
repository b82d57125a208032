package heartbeat

import (
	"context"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
)

// TestIdleRoundAllocatesLittle: a round over the health of agents already
// sent, none changed, compares each entry with what was sent and hashes
// none of them (a hash made ~5 allocations an entry: on an idle host of
// 100k agents half a million every 10 s, most of its garbage).
func TestIdleRoundAllocatesLittle(t *testing.T) {
	key, pid := newKey(t)
	const n = 2000
	local := hostedAgents(t, key, n)
	at := time.Now().UTC().Truncate(time.Second)
	health := make(map[string]agent.Health, n)
	for id := range local {
		health[id] = agent.Health{State: agent.HealthHealthy, SuccessRate: 1, LastOKAt: at, CheckedAt: at}
	}
	node := New(Config{Store: &hostCache{local: local}})
	ctx := context.Background()
	base := agent.Heartbeat{PeerID: pid.String(), SentAt: at, IntervalMS: 10_000}
	r, err := node.buildRound(ctx, base, health, nil)
	if err != nil || len(r.delta) != n {
		t.Fatalf("the first round: %d entries, %v; want %d", len(r.delta), err, n)
	}
	allocs := testing.AllocsPerRun(5, func() {
		if r, err := node.buildRound(ctx, base, health, nil); err != nil || len(r.delta) != 0 {
			t.Fatalf("an idle round: %d entries, %v; want none", len(r.delta), err)
		}
	})
	if allocs > n/10 {
		t.Errorf("an idle round over %d agents allocated %.0f times, want a few (nothing hashed)", n, allocs)
	}
}
