package main

import (
	"slices"
	"testing"
	"time"
)

// BenchmarkDelegation measures delegation against its budget
// (BENCHMARKS.md): a turn of A's
// planner (a delegate llm agent on a fake model) that asks B's calculator
// and then C's haiku agent, each over libp2p, then answers; three model
// rounds in all. It reports what AgentSite adds above the model's own time
// (the time A's model server spent answering): the message API, storing
// the message, the steps and the reply, the runtime's tool loop, and both
// cross-node asks. Turns run one at a time.
//
//	go test -run '^$' -bench BenchmarkDelegation -benchtime 200x ./cmd/agentsite/
func BenchmarkDelegation(b *testing.B) {
	p := startDelegationPlanet(b, "--chat-rate-limit", "100000000")
	turn := func() (total, model time.Duration) {
		before := p.modelNanos.Load()
		t0 := time.Now()
		out, err := p.askPlanner(b.Context(), askTwo)
		total = time.Since(t0)
		if err != nil {
			b.Fatal(err)
		}
		if asks := askSteps(out); len(asks) != 2 || asks[0].Reply != "42" || asks[1].Reply == "" {
			b.Fatalf("steps = %+v", out.Steps)
		}
		return total, time.Duration(p.modelNanos.Load() - before)
	}
	turn() // warm-up: the MCP sessions to B and C are opened here
	var overhead, totals, models []time.Duration
	for b.Loop() {
		total, model := turn()
		totals = append(totals, total)
		models = append(models, model)
		overhead = append(overhead, total-model)
	}
	pct := func(d []time.Duration, q int) float64 {
		slices.Sort(d)
		return ms(d[len(d)*q/100])
	}
	b.ReportMetric(pct(overhead, 50), "overhead-p50-ms")
	b.ReportMetric(pct(overhead, 99), "overhead-p99-ms")
	b.ReportMetric(pct(models, 50), "model-p50-ms")
	b.ReportMetric(pct(totals, 50), "turn-p50-ms")
}
