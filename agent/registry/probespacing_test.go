package registry_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/registry"
)

// TestHealthFollowsProbeSpacing: on a host whose probe budget makes a
// round of all its agents longer than the health window (200 agents at 2
// probes a minute: 100 minutes, against a window of 1 h), no agent once
// probed goes unknown between two of its probes, and each is probed
// again (injected clock; nothing sleeps).
func TestHealthFollowsProbeSpacing(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	h := registry.NewHealth(registry.HealthOptions{Window: time.Hour, Now: clock})
	store := newManyAgents(200)
	probes := &countedProbes{}
	p := &registry.Prober{Store: store, Runtime: probes, Health: h, Interval: time.Minute, Budget: 2, Tick: 30 * time.Second, Now: clock}
	ctx := context.Background()
	for step := 0; step < 200*60/30; step++ { // 200 minutes: two rounds
		if err := p.Round(ctx); err != nil {
			t.Fatal(err)
		}
		for id, s := range h.Summaries() {
			if s.State == agent.HealthUnknown {
				t.Fatalf("at %s (%d probes so far), agent %s probed at %s is unknown", now.Format(time.TimeOnly), probes.count(), id, s.CheckedAt.Format(time.TimeOnly))
			}
		}
		now = now.Add(30 * time.Second)
	}
	if n := probes.count(); n < 300 || n > 2*200+2 {
		t.Fatalf("%d probes in 200 minutes at a budget of 2 a minute", n)
	}
	if len(h.Summaries()) != 200 {
		t.Fatalf("%d of 200 agents have a health after two rounds", len(h.Summaries()))
	}
}
