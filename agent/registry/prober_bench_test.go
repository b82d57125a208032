package registry_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/registry"
	"github.com/agentsite/agentsite/agent/registry/registrytest"
	"github.com/agentsite/agentsite/agent/runtime"
	"github.com/agentsite/agentsite/store/sqlite/sqlitetest"
)

// cpuTime is the CPU the process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkProbeRound: one prober round over 1,000 local agents on a real
// SQLite store, builtins (no probe) or webhooks (an OPTIONS each, all to
// one httptest server in this process, whose CPU is counted too). It
// reports the process's CPU per round and what that is at one round a
// minute as a share of one core (the budget: < 2 %).
func BenchmarkProbeRound(b *testing.B) {
	const agents = 1000
	for _, kind := range []string{agent.BackendBuiltin, agent.BackendWebhook} {
		b.Run(kind, func(b *testing.B) {
			hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusNoContent)
			}))
			b.Cleanup(hook.Close)
			env := registrytest.New(b, sqlitetest.Open(b))
			for i := range agents {
				in := registrytest.Input(fmt.Sprintf("agent-%04d", i))
				if kind == agent.BackendWebhook {
					in.Backend = agent.Backend{Kind: agent.BackendWebhook, URL: fmt.Sprintf("%s/hook/%d", hook.URL, i)}
				}
				if _, err := env.Registry.Create(b.Context(), registry.Operator, in); err != nil {
					b.Fatal(err)
				}
			}
			h := registry.NewHealth(registry.HealthOptions{})
			p := &registry.Prober{Store: env.Store, Runtime: newRuntime(b), Health: h}
			if err := p.Round(b.Context()); err != nil { // warm: connections, caches
				b.Fatal(err)
			}
			if s := h.Summaries(); len(s) != agents {
				b.Fatalf("%d agents probed, want %d", len(s), agents)
			}
			rounds := 0
			cpu0 := cpuTime(b)
			b.ResetTimer()
			for b.Loop() {
				if err := p.Round(b.Context()); err != nil {
					b.Fatal(err)
				}
				rounds++
			}
			perRound := (cpuTime(b) - cpu0) / time.Duration(rounds)
			b.ReportMetric(float64(perRound)/float64(time.Millisecond), "cpu-ms/round")
			b.ReportMetric(100*float64(perRound)/float64(registry.DefaultProbeInterval), "%core@60s")
			for id, s := range h.Summaries() {
				if s.State != agent.HealthHealthy {
					b.Fatalf("%s: %+v", id, s)
				}
			}
		})
	}
}

// BenchmarkHealthSummaries: what a heartbeat pays to read the health of
// 1,000 agents with an hour of probes each (60 samples).
func BenchmarkHealthSummaries(b *testing.B) {
	clock := registrytest.NewClock()
	h := registry.NewHealth(registry.HealthOptions{Now: clock.Now})
	for range 60 {
		for i := range 1000 {
			h.RecordProbe(fmt.Sprintf("agent-%04d", i), runtime.ProbeResult{OK: i%50 != 0, Latency: time.Duration(i) * time.Microsecond})
		}
		clock.Add(time.Minute - time.Second)
	}
	for b.Loop() {
		if len(h.Summaries()) != 1000 {
			b.Fatal("lost agents")
		}
	}
}

// BenchmarkProberIdleTick: one tick of the prober of a host of 100,000
// builtins and 100 webhooks at rest, once the walk at start is over and
// every agent was probed or marked up (a fake store; the clock moves a
// second a tick). It is what a big host pays every second for probes.
func BenchmarkProberIdleTick(b *testing.B) {
	clock := registrytest.NewClock()
	st := newBigHost(100_000, 100)
	h := registry.NewHealth(registry.HealthOptions{Now: clock.Now})
	p := &registry.Prober{Store: st, Runtime: &countedProbes{}, Health: h, Tick: time.Second, Now: clock.Now}
	for range 120 { // the walk (101 pages) and the first probes
		if err := p.Round(b.Context()); err != nil {
			b.Fatal(err)
		}
		clock.Add(time.Second)
	}
	for b.Loop() {
		if err := p.Round(b.Context()); err != nil {
			b.Fatal(err)
		}
		clock.Add(time.Second)
	}
}
