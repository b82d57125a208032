package registry_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/registry"
	"github.com/agentsite/agentsite/agent/registry/registrytest"
)

// BenchmarkHealthSummariesBigHost: what the heartbeat asks every interval
// of a host of 100k agents (Snapshot; Summaries before it), each probed
// once a minute ago, nothing new since the last ask.
func BenchmarkHealthSummariesBigHost(b *testing.B) {
	h, clock := newHealth()
	const n = 100000
	for i := range n {
		h.RecordProbe(fmt.Sprintf("agent-%06d", i), up(20*time.Millisecond))
	}
	clock.Add(time.Minute)
	_, _ = h.Snapshot()
	b.ReportAllocs()
	for b.Loop() {
		_, _ = h.Snapshot()
	}
}

// TestHealthSummaryKeptIsFresh: a summary kept from an earlier ask is the
// one a tracker that never summarized would give, at every step of a
// random run of probes, turns, builtins and clock steps across the window
// and the recent part of it (a fresh tracker is fed the same outcomes at
// the same times and asked once).
func TestHealthSummaryKeptIsFresh(t *testing.T) {
	type event struct {
		at      time.Duration // since the start
		id      string
		kind    int // 0 probe up, 1 probe down, 2 turn ok, 3 turn failed, 4 builtin
		latency time.Duration
	}
	rng := rand.New(rand.NewPCG(29, 7))
	opts := func(c *registrytest.Clock) registry.HealthOptions {
		return registry.HealthOptions{SlowAfter: 100 * time.Millisecond, Recent: 5 * time.Minute, Window: 20 * time.Minute, Now: c.Now}
	}
	clock := registrytest.NewClock()
	start := clock.Now()
	h := registry.NewHealth(opts(clock))
	// Probes further apart than this widen the window, and a summary
	// prunes with the window of its time: a tracker asked more often
	// (this one) forgets differently from one asked once. The spacing
	// keeps the window at 66 minutes for both.
	h.SetProbeSpacing(30 * time.Minute)
	apply := func(h *registry.Health, e event) {
		switch e.kind {
		case 0:
			h.RecordProbe(e.id, up(e.latency))
		case 1:
			h.RecordProbe(e.id, down("refused"))
		case 2:
			h.RecordTurn(e.id, true, e.latency)
		case 3:
			h.RecordTurn(e.id, false, e.latency)
		case 4:
			h.RecordBuiltin(e.id)
		}
	}
	var events []event
	ids := []string{"a", "b", "c", "d"}
	for step := range 400 {
		clock.Add(time.Duration(rng.IntN(30)) * time.Second)
		now := clock.Now().Sub(start)
		if rng.IntN(3) > 0 {
			e := event{at: now, id: ids[rng.IntN(len(ids))], kind: rng.IntN(5), latency: time.Duration(rng.IntN(300)) * time.Millisecond}
			events = append(events, e)
			apply(h, e)
		}
		kept := h.Summaries()
		fc := registrytest.NewClock()
		fc.Add(start.Sub(fc.Now()))
		fresh := registry.NewHealth(opts(fc))
		fresh.SetProbeSpacing(30 * time.Minute)
		for _, e := range events {
			fc.Add(start.Add(e.at).Sub(fc.Now()))
			apply(fresh, e)
		}
		fc.Add(clock.Now().Sub(fc.Now()))
		want := fresh.Summaries()
		for _, id := range ids {
			if !sameHealth(kept[id], want[id]) {
				t.Fatalf("step %d, %s: kept summary %+v, a fresh one %+v", step, id, kept[id], want[id])
			}
		}
	}
}

func sameHealth(a, b agent.Health) bool {
	return a.State == b.State && a.LatencyMS == b.LatencyMS && a.SuccessRate == b.SuccessRate &&
		a.Uses7d == b.Uses7d && a.LastOKAt.Equal(b.LastOKAt) && a.CheckedAt.Equal(b.CheckedAt)
}

// TestHealthSnapshotFollowsChanges: the heartbeat's snapshot is the same
// map and version while nothing changed (no copy of 100k agents' health
// every interval on an idle host), and a new one, the old left as it was,
// when an outcome is recorded, an agent forgotten, or the clock takes a
// sample out of the window; a builtin's summary outlives its sample.
func TestHealthSnapshotFollowsChanges(t *testing.T) {
	h, clock := newHealth() // Recent 5 minutes, Window an hour
	const n = 1000
	for i := range n {
		h.RecordProbe(fmt.Sprintf("agent-%04d", i), up(20*time.Millisecond))
	}
	h.RecordBuiltin("builtin")
	s1, v1 := h.Snapshot()
	clock.Add(10 * time.Second)
	if allocs := testing.AllocsPerRun(5, func() { _, _ = h.Snapshot() }); allocs != 0 {
		t.Errorf("a snapshot of %d agents with nothing new allocated %.0f times, want 0", n, allocs)
	}
	if s, v := h.Snapshot(); v != v1 || len(s) != n+1 {
		t.Fatalf("nothing changed: version %d, %d agents; want %d, %d", v, len(s), v1, n+1)
	}
	h.RecordProbe("agent-0001", down("refused"))
	s2, v2 := h.Snapshot()
	if v2 == v1 || s2["agent-0001"].State != agent.HealthDegraded || s1["agent-0001"].State != agent.HealthHealthy {
		t.Errorf("after a failed probe: version %d (was %d), now %q, the old snapshot %q; want a new version, degraded, healthy",
			v2, v1, s2["agent-0001"].State, s1["agent-0001"].State)
	}
	h.Forget("agent-0002")
	s3, v3 := h.Snapshot()
	if _, ok := s3["agent-0002"]; ok || v3 == v2 {
		t.Errorf("after Forget: version %d (was %d), agent-0002 still there: %v", v3, v2, ok)
	}
	clock.Add(6 * time.Minute) // the failure leaves Recent; the window still holds it
	if _, v := h.Snapshot(); v != v3 {
		t.Errorf("after Recent passed with the same summaries: version %d, want %d", v, v3)
	}
	clock.Add(time.Hour) // every probe leaves the window
	s4, v4 := h.Snapshot()
	if v4 == v3 || s4["agent-0003"].State != agent.HealthUnknown || s4["builtin"].State != agent.HealthHealthy {
		t.Errorf("after the window: version %d (was %d), a probed agent %q, the builtin %q; want a new version, unknown, healthy",
			v4, v3, s4["agent-0003"].State, s4["builtin"].State)
	}
}
