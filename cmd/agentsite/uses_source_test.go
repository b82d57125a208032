package main

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/agentsite/agentsite/agent"
)

// TestUsesSourceCopiesOnChange: the heartbeat's health source adds the
// week's conversations to the agents that had one, never writing to the
// tracker's shared snapshot, and copies the snapshot only when it or the
// counts changed: an idle host of 100k agents copied its whole map every
// heartbeat (a good part of its idle CPU and garbage).
func TestUsesSourceCopiesOnChange(t *testing.T) {
	const n = 10000
	health := make(map[string]agent.Health, n)
	for i := range n {
		health[fmt.Sprintf("agent-%05d", i)] = agent.Health{State: agent.HealthHealthy, SuccessRate: 1}
	}
	ver := uint64(1)
	u := &uses{}
	src := u.source(func() (map[string]agent.Health, uint64) { return health, ver })
	allocated := func() uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_ = src()
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	if b := allocated(); b > 16<<10 {
		t.Errorf("with no conversations the source of %d agents allocated %d bytes, want none (the snapshot itself)", n, b)
	}
	u.counts = map[string]int{"agent-00007": 3, "agent-00009": agent.MaxUses7d + 5, "gone": 2}
	got := src()
	if len(got) != n || got["agent-00007"].Uses7d != 3 || got["agent-00009"].Uses7d != agent.MaxUses7d || got["agent-00008"].Uses7d != 0 {
		t.Errorf("source: %d agents, uses %d, %d, %d; want %d, 3, %d, 0", len(got), got["agent-00007"].Uses7d, got["agent-00009"].Uses7d, got["agent-00008"].Uses7d, n, agent.MaxUses7d)
	}
	if _, ok := got["gone"]; ok {
		t.Error("an agent the tracker does not know was added for its conversations")
	}
	if health["agent-00007"].Uses7d != 0 {
		t.Error("the source wrote to the tracker's snapshot")
	}
	if b := allocated(); b > 16<<10 {
		t.Errorf("with nothing changed the source of %d agents allocated %d bytes, want none (the last copy)", n, b)
	}
	ver++
	health["agent-00007"] = agent.Health{State: agent.HealthDegraded}
	if got := src(); got["agent-00007"].State != agent.HealthDegraded || got["agent-00007"].Uses7d != 3 {
		t.Errorf("after the tracker changed: %+v, want degraded with 3 uses", got["agent-00007"])
	}
}
