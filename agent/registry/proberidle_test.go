package registry_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/registry"
	"github.com/agentsite/agentsite/agent/registry/registrytest"
	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/store/sqlite/sqlitetest"
)

// bigHost is a ProbeStore of many builtins and a few webhooks, sorted
// by id, that counts the pages of ids and the backends the prober reads.
type bigHost struct {
	ids   []string
	kinds map[string]string

	mu              sync.Mutex
	pages, backends int
}

func newBigHost(builtins, webhooks int) *bigHost {
	h := &bigHost{kinds: map[string]string{}}
	for i := range builtins {
		h.kinds[fmt.Sprintf("b%06d", i)] = agent.BackendBuiltin
	}
	for i := range webhooks {
		h.kinds[fmt.Sprintf("w%06d", i)] = agent.BackendWebhook
	}
	for id := range h.kinds {
		h.ids = append(h.ids, id)
	}
	slices.Sort(h.ids)
	return h
}

func (h *bigHost) LocalRefs(_ context.Context, q store.LocalQuery) ([]store.LocalRef, error) {
	i, found := slices.BinarySearch(h.ids, q.After)
	if found {
		i++
	}
	var out []store.LocalRef
	for _, id := range h.ids[i:min(len(h.ids), i+q.PageLimit())] {
		out = append(out, store.LocalRef{ID: id, Kind: h.kinds[id]})
	}
	h.mu.Lock()
	h.pages++
	h.mu.Unlock()
	return out, nil
}

func (h *bigHost) GetBackend(_ context.Context, id string) (agent.Backend, error) {
	h.mu.Lock()
	h.backends++
	h.mu.Unlock()
	if h.kinds[id] == agent.BackendBuiltin {
		return agent.Backend{Kind: agent.BackendBuiltin, Builtin: "echo"}, nil
	}
	return agent.Backend{Kind: agent.BackendWebhook, URL: "https://" + id + ".example.org/"}, nil
}

func (h *bigHost) counts() (pages, backends int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.pages, h.backends
}

// TestProberIdleReadsWhatIsDue: a host of 5,000 builtins and 20 webhooks
// ticked every second for three hours on the test's clock reads the ids
// of its agents only in the walk at start and in one walk an hour
// (Resync), one page a tick, and a backend only for each probe it makes;
// the ticks between read nothing. Every agent stays healthy. Before, the
// ids were walked again every Interval (a minute): a host of 100k agents
// read a page of ids every tick, for ever, and each builtin was recorded
// up again every 10 minutes, a health change for every heartbeat to carry.
func TestProberIdleReadsWhatIsDue(t *testing.T) {
	const (
		builtins = 5000
		webhooks = 20
		page     = 500
	)
	clock := registrytest.NewClock()
	st := newBigHost(builtins, webhooks)
	probes := &countedProbes{}
	h := registry.NewHealth(registry.HealthOptions{Now: clock.Now})
	p := &registry.Prober{Store: st, Runtime: probes, Health: h, PageSize: page, Tick: time.Second, Now: clock.Now}
	walk := (builtins+webhooks)/page + 1 // pages of one walk
	idle := 0                            // ticks that read nothing
	var early map[string]agent.Health    // the health after the walk at start
	for i := range 3 * 3600 {
		if i == 600 {
			early = h.Summaries()
		}
		pages, backends := st.counts()
		if err := p.Round(t.Context()); err != nil {
			t.Fatal(err)
		}
		if p2, b2 := st.counts(); p2 == pages && b2 == backends {
			idle++
		}
		clock.Add(time.Second)
	}
	pages, backends := st.counts()
	if want := 3 * walk; pages > want {
		t.Fatalf("read %d pages of ids in 3 hours; want at most %d (a walk of %d pages at start and each hour)", pages, want, walk)
	}
	if backends != probes.count() {
		t.Fatalf("read %d backends for %d probes; want one a probe (builtins need none)", backends, probes.count())
	}
	// Each webhook about once a minute, every builtin none.
	if n := probes.count(); n < webhooks*170 || n > webhooks*200 {
		t.Fatalf("%d probes in 3 hours of %d webhooks probed every minute", n, webhooks)
	}
	if idle < 3*3600*2/3 {
		t.Fatalf("%d of %d ticks read nothing; want most (only walks and due probes read)", idle, 3*3600)
	}
	sums := h.Summaries()
	if len(sums) != builtins+webhooks {
		t.Fatalf("%d agents have a health, want %d", len(sums), builtins+webhooks)
	}
	for id, s := range sums {
		if s.State != agent.HealthHealthy {
			t.Fatalf("%s: %+v, want healthy", id, s)
		}
		// A builtin's health does not change: the heartbeats of an idle
		// host carry no health delta for it.
		if st.kinds[id] == agent.BackendBuiltin && s != early[id] {
			t.Fatalf("builtin %s: health %+v after 3 hours, %+v after 10 minutes; want it unchanged", id, s, early[id])
		}
	}
}

// TestProberHearsRegistryChanges: once the walk at start is over, an
// agent the registry creates is probed at the next tick, one it changes
// to a builtin is no longer probed (and back to a webhook, probed again),
// and one it deletes is forgotten (no probe, no health), all without
// another walk of the ids. Before, the
// prober learned of them only by walking every agent's id again.
func TestProberHearsRegistryChanges(t *testing.T) {
	st := &countingStore{Store: sqlitetest.Open(t)}
	e := registrytest.New(t, st)
	probes := &countedProbes{}
	clock := registrytest.NewClock() // the prober's; the registry signs on e.Clock
	h := registry.NewHealth(registry.HealthOptions{Now: clock.Now})
	p := &registry.Prober{Store: st, Runtime: probes, Health: h, Tick: time.Second, Now: clock.Now}
	e.Registry.Schedule = p
	ctx := t.Context()
	if err := p.Round(ctx); err != nil { // the walk at start: no agent yet
		t.Fatal(err)
	}
	st.reset()

	in := registrytest.Input("hooked")
	in.Backend = agent.Backend{Kind: agent.BackendWebhook, URL: "http://127.0.0.1:9/hook"}
	l, err := e.Registry.Create(ctx, registry.Operator, in)
	if err != nil {
		t.Fatal(err)
	}
	clock.Add(time.Second)
	if err := p.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if probes.count() != 1 || h.Summary(l.Record.ID).State != agent.HealthHealthy {
		t.Fatalf("after a create: %d probes, health %+v; want the new agent probed", probes.count(), h.Summary(l.Record.ID))
	}

	in.Backend = agent.Backend{Kind: agent.BackendBuiltin, Builtin: "echo"}
	if _, err := e.Registry.Update(ctx, registry.Operator, l.Record.ID, in); err != nil {
		t.Fatal(err)
	}
	for range 5 * 60 { // five minutes: five probe intervals
		clock.Add(time.Second)
		if err := p.Round(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if probes.count() != 1 || h.Summary(l.Record.ID).State != agent.HealthHealthy {
		t.Fatalf("after a change to a builtin: %d probes, health %+v; want no more probes, healthy", probes.count(), h.Summary(l.Record.ID))
	}

	// Back to a webhook: the builtin's health is forgotten (nothing
	// probed it), and the next tick probes it.
	in.Backend = agent.Backend{Kind: agent.BackendWebhook, URL: "http://127.0.0.1:9/hook"}
	if _, err := e.Registry.Update(ctx, registry.Operator, l.Record.ID, in); err != nil {
		t.Fatal(err)
	}
	if s := h.Summary(l.Record.ID); s.State != agent.HealthUnknown {
		t.Fatalf("a builtin changed to a webhook is %+v before its first probe, want unknown", s)
	}
	clock.Add(time.Second)
	if err := p.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if probes.count() != 2 || h.Summary(l.Record.ID).State != agent.HealthHealthy {
		t.Fatalf("after a change back to a webhook: %d probes, health %+v; want it probed", probes.count(), h.Summary(l.Record.ID))
	}

	if err := e.Registry.Delete(ctx, registry.Operator, l.Record.ID); err != nil {
		t.Fatal(err)
	}
	if s := h.Summary(l.Record.ID); s.State != agent.HealthUnknown {
		t.Fatalf("after a delete the agent's health is %+v, want forgotten", s)
	}
	for range 20 * 60 {
		clock.Add(time.Second)
		if err := p.Round(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if len(h.Summaries()) != 0 || probes.count() != 2 {
		t.Fatalf("after a delete: health of %v, %d probes; want none", h.Summaries(), probes.count())
	}
	if st.pages != 0 {
		t.Fatalf("read %d pages of ids after the walk at start; want none within the hour", st.pages)
	}
}
