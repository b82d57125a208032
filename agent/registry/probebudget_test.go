package registry_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/registry"
	"github.com/agentsite/agentsite/agent/registry/registrytest"
	"github.com/agentsite/agentsite/agent/runtime"
	"github.com/agentsite/agentsite/store"
)

// manyAgents is a ProbeStore of n webhook agents, sorted by id, that
// counts what the prober reads.
type manyAgents struct {
	ids []string

	mu                    sync.Mutex
	pages, refs, backends int
	biggest               int
}

func newManyAgents(n int) *manyAgents {
	m := &manyAgents{}
	for i := range n {
		m.ids = append(m.ids, fmt.Sprintf("a%06d", i))
	}
	return m
}

func (m *manyAgents) LocalRefs(_ context.Context, q store.LocalQuery) ([]store.LocalRef, error) {
	i, _ := slices.BinarySearch(m.ids, q.After)
	if i < len(m.ids) && m.ids[i] == q.After {
		i++
	}
	var out []store.LocalRef
	for _, id := range m.ids[i:min(len(m.ids), i+q.PageLimit())] {
		out = append(out, store.LocalRef{ID: id, Kind: agent.BackendWebhook})
	}
	m.mu.Lock()
	m.pages++
	m.refs += len(out)
	m.biggest = max(m.biggest, len(out))
	m.mu.Unlock()
	return out, nil
}

func (m *manyAgents) GetBackend(_ context.Context, id string) (agent.Backend, error) {
	m.mu.Lock()
	m.backends++
	m.mu.Unlock()
	return agent.Backend{Kind: agent.BackendWebhook, URL: "https://" + id + ".example.org/"}, nil
}

// countedProbes answers every probe at once and logs which agents'
// backends were probed, in order.
type countedProbes struct {
	mu    sync.Mutex
	order []string
}

func (c *countedProbes) Probe(_ context.Context, b agent.Backend) runtime.ProbeResult {
	c.mu.Lock()
	c.order = append(c.order, strings.TrimSuffix(strings.TrimPrefix(b.URL, "https://"), ".example.org/"))
	c.mu.Unlock()
	return runtime.ProbeResult{OK: true, Latency: time.Millisecond}
}

func (c *countedProbes) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.order)
}

// TestProbeBudget: a host of 20,000 agents, all due at once, probes at
// most Budget of them in any minute (ticks of 2s on the test's clock for
// five minutes), reads one page of ids a tick, and a backend
// only for each agent it probes; the agents people used lately are
// probed first. Before, one round probed all 20,000.
func TestProbeBudget(t *testing.T) {
	const (
		n      = 20000
		budget = 120
	)
	clock := registrytest.NewClock()
	st := newManyAgents(n)
	probes := &countedProbes{}
	h := registry.NewHealth(registry.HealthOptions{Now: clock.Now})
	used := []string{"a019999", "a012345", "a000777"}
	for _, id := range used {
		h.RecordTurn(id, true, time.Millisecond)
	}
	p := &registry.Prober{Store: st, Runtime: probes, Health: h, Budget: budget, PageSize: 500, Now: clock.Now}

	var perTick []int // probes made at each tick
	const tick = 2 * time.Second
	for range 5 * time.Minute / tick {
		before := probes.count()
		pages := st.pages
		if err := p.Round(t.Context()); err != nil {
			t.Fatal(err)
		}
		if st.pages-pages > 1 {
			t.Fatalf("a tick read %d pages of ids, want at most one", st.pages-pages)
		}
		perTick = append(perTick, probes.count()-before)
		clock.Add(tick)
	}
	for i := range perTick {
		inMinute := 0
		for _, k := range perTick[i:min(len(perTick), i+int(time.Minute/tick))] {
			inMinute += k
		}
		if inMinute > budget {
			t.Fatalf("%d probes in the minute from tick %d, budget %d", inMinute, i, budget)
		}
	}
	total := probes.count()
	if total < 5*budget*9/10 || total > 5*budget {
		t.Fatalf("%d probes in 5 minutes, want about the budget, %d a minute", total, budget)
	}
	if st.backends != total || st.biggest > 500 {
		t.Fatalf("%d backends read for %d probes, pages of up to %d ids", st.backends, total, st.biggest)
	}
	probes.mu.Lock()
	first := slices.Clone(probes.order[:perTick[0]])
	probes.mu.Unlock()
	for _, id := range used {
		if !slices.Contains(first, id) {
			t.Fatalf("first tick probed %v, not the used agent %s", first, id)
		}
	}
}
