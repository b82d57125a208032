package registry_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/registry"
	"github.com/agentsite/agentsite/agent/runtime"
	"github.com/agentsite/agentsite/internal/waitfor"
)

// gatedProbes fakes the runtime's probes: each waits for release, and it
// counts the probes per URL and the most in flight at once.
type gatedProbes struct {
	release chan struct{}

	mu       sync.Mutex
	inflight int
	most     int
	calls    map[string]int
}

func (g *gatedProbes) Probe(ctx context.Context, b agent.Backend) runtime.ProbeResult {
	g.mu.Lock()
	g.inflight++
	g.most = max(g.most, g.inflight)
	g.calls[b.URL]++
	g.mu.Unlock()
	select {
	case <-g.release:
	case <-ctx.Done():
	}
	g.mu.Lock()
	g.inflight--
	g.mu.Unlock()
	return runtime.ProbeResult{OK: true, Latency: time.Millisecond}
}

func (g *gatedProbes) stats() (inflight, most, total int, calls map[string]int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	calls = map[string]int{}
	for k, v := range g.calls {
		calls[k] = v
		total += v
	}
	return g.inflight, g.most, total, calls
}

// observed counts what a ProbeObserver heard.
type observed struct {
	mu     sync.Mutex
	byKind map[string]int
}

func (o *observed) ObserveProbe(kind string, res runtime.ProbeResult) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.byKind[kind+" "+res.Outcome()]++
}

// probeFixture is 20 webhook agents and 3 builtins on gated probes.
func probeFixture() (*agents, *gatedProbes) {
	st := &agents{backends: map[string]agent.Backend{}}
	for i := range 20 {
		st.backends[fmt.Sprintf("w%02d", i)] = agent.Backend{Kind: agent.BackendWebhook, URL: fmt.Sprintf("https://hook%02d.example.org/", i)}
	}
	for i := range 3 {
		st.backends[fmt.Sprintf("b%d", i)] = agent.Backend{Kind: agent.BackendBuiltin, Builtin: "echo"}
	}
	return st, &gatedProbes{release: make(chan struct{}), calls: map[string]int{}}
}

// TestProberRound: a round probes every local agent's backend once, at
// most Concurrency at a time, records builtins as up without a probe, and
// forgets agents no longer hosted.
func TestProberRound(t *testing.T) {
	st, probes := probeFixture()
	h := registry.NewHealth(registry.HealthOptions{})
	h.RecordProbe("deleted", runtime.ProbeResult{OK: true})
	obs := &observed{byKind: map[string]int{}}
	p := &registry.Prober{Store: st, Runtime: probes, Health: h, Concurrency: 3, Observer: obs}

	done := make(chan error, 1)
	go func() { done <- p.Round(t.Context()) }()
	waitfor.Until(t, 10*time.Second, "3 probes in flight", func() bool { in, _, _, _ := probes.stats(); return in == 3 })
	close(probes.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	_, most, total, calls := probes.stats()
	if most != 3 || total != 20 || len(calls) != 20 {
		t.Fatalf("%d probes of %d backends, at most %d at once; want each of 20 once, at most 3 at once", total, len(calls), most)
	}
	sums := h.Summaries()
	if len(sums) != 23 {
		t.Fatalf("%d summaries, want the 23 local agents only: %v", len(sums), sums)
	}
	for id, s := range sums {
		if s.State != agent.HealthHealthy {
			t.Errorf("%s: %+v, want healthy", id, s)
		}
	}
	if n := obs.byKind["webhook ok"]; n != 20 || len(obs.byKind) != 1 {
		t.Fatalf("observed %v, want 20 ok webhook probes (builtins are not probed)", obs.byKind)
	}
}

// TestProberRun: the loop probes every interval until its context ends.
func TestProberRun(t *testing.T) {
	st, probes := probeFixture()
	close(probes.release)
	p := &registry.Prober{Store: st, Runtime: probes, Health: registry.NewHealth(registry.HealthOptions{}), Interval: 20 * time.Millisecond}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		p.Run(ctx)
		close(done)
	}()
	waitfor.Until(t, 10*time.Second, "three rounds", func() bool { _, _, total, _ := probes.stats(); return total >= 60 })
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}

// TestProbeNow: the form's Test backend probes a backend not yet saved,
// records nothing, and reports the outcome.
func TestProbeNow(t *testing.T) {
	f, b := fakeBackend(t, agent.BackendWebhook)
	f.mode.Store(modeDown)
	h := registry.NewHealth(registry.HealthOptions{})
	obs := &observed{byKind: map[string]int{}}
	p := &registry.Prober{Store: &agents{}, Runtime: newRuntime(t), Health: h, Observer: obs}
	res := p.ProbeNow(t.Context(), b)
	if res.OK || res.Message() != "HTTP 503 Service Unavailable from the webhook" {
		t.Fatalf("ProbeNow = %+v (%q)", res, res.Message())
	}
	if len(h.Summaries()) != 0 || obs.byKind["webhook agent_unavailable"] != 1 {
		t.Fatalf("summaries %v, observed %v: want none recorded, one observed", h.Summaries(), obs.byKind)
	}
	if _, err := p.ProbeAgent(t.Context(), "nobody"); err == nil {
		t.Fatal("ProbeAgent of an agent without a backend succeeded")
	}
}
