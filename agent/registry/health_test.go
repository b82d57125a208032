package registry_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/registry"
	"github.com/agentsite/agentsite/agent/registry/registrytest"
	"github.com/agentsite/agentsite/agent/runtime"
)

// up and down are probe results of a fast (or slow) backend and a dead one.
func up(latency time.Duration) runtime.ProbeResult {
	return runtime.ProbeResult{OK: true, Latency: latency}
}

func down(why string) runtime.ProbeResult {
	return runtime.ProbeResult{Latency: time.Millisecond,
		Err: &runtime.BackendError{Kind: agent.ErrBackendUnavailable, Backend: agent.BackendWebhook, Public: why}}
}

// newHealth is a tracker on a test clock: probes fail "failing" after 3,
// answers are slow past 100ms, the state judges the last 5 minutes.
func newHealth() (*registry.Health, *registrytest.Clock) {
	clock := registrytest.NewClock()
	return registry.NewHealth(registry.HealthOptions{SlowAfter: 100 * time.Millisecond, Recent: 5 * time.Minute, Now: clock.Now}), clock
}

func TestHealthUnknown(t *testing.T) {
	h, _ := newHealth()
	if got := h.Summary("a1"); got != (agent.Health{State: agent.HealthUnknown}) {
		t.Fatalf("Summary of an agent never seen = %+v", got)
	}
	if n := len(h.Summaries()); n != 0 {
		t.Fatalf("%d summaries, want none", n)
	}
}

// TestHealthMath: success rate and median latency over the window, last
// good answer and last check, and samples leaving the window.
func TestHealthMath(t *testing.T) {
	h, clock := newHealth()
	start := clock.Now()
	for _, r := range []runtime.ProbeResult{up(40 * time.Millisecond), up(10 * time.Millisecond), down("x"), up(30 * time.Millisecond), up(20 * time.Millisecond)} {
		h.RecordProbe("a1", r)
		clock.Add(time.Minute)
	}
	// Samples at start+0..4 min; now start+5 min.
	got := h.Summary("a1")
	want := agent.Health{State: agent.HealthDegraded, LatencyMS: 20, SuccessRate: 0.8,
		LastOKAt: start.Add(4 * time.Minute).Truncate(time.Second), CheckedAt: start.Add(4 * time.Minute).Truncate(time.Second)}
	if got != want {
		t.Fatalf("Summary =\n%+v, want\n%+v", got, want)
	}

	// An hour after the second sample, the first two are out of the window.
	clock.Add(time.Hour - 4*time.Minute)
	got = h.Summary("a1")
	if got.SuccessRate != 0.667 || got.LatencyMS != 20 { // failed, 30ms, 20ms: lower median of 20, 30
		t.Fatalf("after the window moved: %+v, want success 2/3 and p50 20ms", got)
	}
	// Beyond the window nothing is known but when it last answered.
	clock.Add(time.Hour)
	got = h.Summary("a1")
	if got.State != agent.HealthUnknown || got.SuccessRate != 0 || got.LatencyMS != 0 || !got.LastOKAt.Equal(want.LastOKAt) {
		t.Fatalf("after the window: %+v, want unknown with the last good answer kept", got)
	}
	if s := h.Summaries(); len(s) != 1 || s["a1"] != got {
		t.Fatalf("Summaries = %+v", s)
	}
}

// TestHealthStates: three probes failing in a row is failing, a failure
// or a slow median in the recent part is degraded, and recovery shows
// once the failures are older than that.
func TestHealthStates(t *testing.T) {
	h, clock := newHealth()
	steps := []struct {
		res  runtime.ProbeResult
		want string
	}{
		{up(time.Millisecond), agent.HealthHealthy},
		{down("refused"), agent.HealthDegraded},
		{down("refused"), agent.HealthDegraded},
		{down("refused"), agent.HealthFailing},
		{up(300 * time.Millisecond), agent.HealthDegraded}, // up again, slowly, after failures
		{up(time.Millisecond), agent.HealthDegraded},
		{up(time.Millisecond), agent.HealthDegraded},
		{up(time.Millisecond), agent.HealthDegraded},      // the last failure is 4 min old
		{up(time.Millisecond), agent.HealthHealthy},       // now 5: out of the recent part
		{up(300 * time.Millisecond), agent.HealthHealthy}, // one slow answer: the median is fast
	}
	for i, s := range steps {
		h.RecordProbe("a1", s.res)
		if got := h.Summary("a1").State; got != s.want {
			t.Fatalf("after probe %d: %s, want %s", i+1, got, s.want)
		}
		clock.Add(time.Minute)
	}
	for range 5 {
		h.RecordProbe("a1", up(300*time.Millisecond))
		clock.Add(time.Minute)
	}
	if got := h.Summary("a1").State; got != agent.HealthDegraded {
		t.Fatalf("after 5 slow probes: %s, want degraded", got)
	}
}

// TestHealthTurns: real turns move the state too. Most of the recent
// turns failing is failing even while probes succeed; one failure is
// degraded.
func TestHealthTurns(t *testing.T) {
	h, clock := newHealth()
	h.RecordProbe("a1", up(time.Millisecond))
	h.RecordTurn("a1", true, 20*time.Millisecond)
	if got := h.Summary("a1").State; got != agent.HealthHealthy {
		t.Fatalf("after a good turn: %s", got)
	}
	h.RecordTurn("a1", false, time.Second)
	if got := h.Summary("a1").State; got != agent.HealthDegraded {
		t.Fatalf("after a failed turn: %s, want degraded", got)
	}
	h.RecordTurn("a1", false, time.Second)
	h.RecordProbe("a1", up(time.Millisecond))
	if got := h.Summary("a1"); got.State != agent.HealthFailing || got.SuccessRate != 0.6 {
		t.Fatalf("after 2 of 3 turns failed: %+v, want failing at 60%%", got)
	}
	clock.Add(6 * time.Minute)
	h.RecordTurn("a1", true, 20*time.Millisecond)
	if got := h.Summary("a1").State; got != agent.HealthHealthy {
		t.Fatalf("once the failed turns are not recent: %s, want healthy", got)
	}
}

func TestHealthLastErrorAndRetain(t *testing.T) {
	h, _ := newHealth()
	h.RecordProbe("a1", down("connection refused at example.org:443"))
	h.RecordTurn("a1", true, time.Millisecond) // a turn does not clear the probe's error
	h.RecordProbe("a2", up(time.Millisecond))
	if got := h.LastError("a1"); got != "connection refused at example.org:443" {
		t.Fatalf("LastError = %q", got)
	}
	if got := h.LastError("a2") + h.LastError("nobody"); got != "" {
		t.Fatalf("LastError of a good or unknown agent = %q", got)
	}
	h.RecordProbe("a1", up(time.Millisecond))
	if got := h.LastError("a1"); got != "" {
		t.Fatalf("LastError after a good probe = %q", got)
	}
	h.Retain(map[string]bool{"a2": true})
	if s := h.Summaries(); len(s) != 1 || s["a2"].State != agent.HealthHealthy {
		t.Fatalf("after Retain(a2): %+v", s)
	}
	// A canceled probe says nothing of the backend.
	h.RecordProbe("a3", runtime.ProbeResult{Err: fmt.Errorf("webhook backend: %w", context.Canceled)})
	if s := h.Summaries(); len(s) != 1 {
		t.Fatalf("a canceled probe was recorded: %+v", s)
	}
}

// TestHealthSamplesBounded: a busy agent keeps its last MaxSamples
// outcomes.
func TestHealthSamplesBounded(t *testing.T) {
	clock := registrytest.NewClock()
	h := registry.NewHealth(registry.HealthOptions{MaxSamples: 4, Now: clock.Now})
	for i := range 10 {
		h.RecordTurn("a1", i >= 7, time.Millisecond) // the last 3 of 10 succeed
	}
	if got := h.Summary("a1").SuccessRate; got != 0.75 {
		t.Fatalf("success rate %v, want 3 of the last 4", got)
	}
}
