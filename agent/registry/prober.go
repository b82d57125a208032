package registry

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/runtime"
	"github.com/agentsite/agentsite/store"
)

// ProbeStore is what the prober reads: this node's agents a page of ids
// and backend kinds at a time, and a backend when one is probed
// (registry.Store has both).
type ProbeStore interface {
	LocalRefs(ctx context.Context, q store.LocalQuery) ([]store.LocalRef, error)
	GetBackend(ctx context.Context, id string) (agent.Backend, error)
}

// Probes runs one health probe of a backend (runtime.Runtime).
type Probes interface {
	Probe(ctx context.Context, b agent.Backend) runtime.ProbeResult
}

// ProbeObserver hears every probe made, by backend kind (the node's
// metrics).
type ProbeObserver interface {
	ObserveProbe(kind string, res runtime.ProbeResult)
}

// Defaults of the Prober.
const (
	DefaultProbeInterval    = time.Minute
	DefaultProbeConcurrency = 8
	// DefaultProbeBudget is the most backend probes a minute: 600 (ten a
	// second) probes every agent of a host of 600 each minute; probing
	// 100k agents a minute would be 1,700 probes a second (issue 20).
	DefaultProbeBudget = 600
	// probeJitter spreads each agent's probes by ±10%.
	probeJitter = 0.1
	// builtinEvery is the most often a builtin (always up, never
	// probed) is recorded as up: each record is a sample the health
	// window keeps for an hour (40 bytes), 240 MB an hour for 100k
	// builtins recorded every minute.
	builtinEvery = 10 * time.Minute
)

// Prober probes this node's own agents and records what it finds in
// Health: the active half of agent health (docs/architecture.md "Agent health"). It
// never probes other nodes' agents: their hosts do, and their heartbeats
// say what they found. Set Store, Runtime and Health before use.
//
// It keeps each agent's next probe in memory and learns which agents
// there are by walking their ids, one page a tick, again at most every
// Interval. A tick probes the agents that are due, those that people
// used lately (real turns in Health's recent window) first, then the
// longest overdue, within the Budget: at most Budget probes in any
// minute, paced at Budget a minute. An agent is due Interval (±10%)
// after its last probe; past the budget, every agent is probed in turn,
// less often.
type Prober struct {
	Store   ProbeStore
	Runtime Probes
	Health  *Health
	// Interval is the time between two probes of an agent, jittered by
	// ±10%. Default 60s.
	Interval time.Duration
	// Budget is the most backend probes in any minute. Default 600.
	Budget int
	// Concurrency bounds the probes in flight. Default 8.
	Concurrency int
	// Tick is how often Run looks for due agents. Default Interval/4,
	// at most 1s.
	Tick time.Duration
	// PageSize is how many ids the walk reads a tick. Default
	// store.MaxLocalPage.
	PageSize int
	// Observer, if set, hears every probe (not builtins, which need none).
	Observer ProbeObserver
	Logger   *slog.Logger
	// Now is the clock of the schedule and the budget. Default time.Now.
	Now func() time.Time

	mu    sync.Mutex
	sched map[string]*probeEntry
	walk  probeWalk
	// spent holds when each of the last Budget probes started, oldest
	// first: the window the budget is counted over.
	spent []time.Time
	// tokens paces the budget: Budget a minute, at most a sixth of it
	// at once.
	tokens   float64
	refilled time.Time
}

// probeEntry is one local agent's place in the schedule.
type probeEntry struct {
	kind  string
	due   time.Time
	walk  uint64    // the last walk that saw the agent
	added time.Time // when the prober first heard of it
}

// probeWalk is where the walk of the local agents' ids is.
type probeWalk struct {
	n       uint64 // walks started
	active  bool
	after   string
	started time.Time
}

// Run probes what is due now, then every Tick, until ctx ends.
func (p *Prober) Run(ctx context.Context) {
	t := time.NewTicker(p.tick())
	defer t.Stop()
	for {
		if err := p.Round(ctx); err != nil && ctx.Err() == nil {
			p.logger().Warn("probing local agents failed; will retry", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Round is one tick: it reads the next page of the walk of local agents
// (forgetting, at the end of a walk, the agents no longer hosted), then
// probes the agents that are due, within the budget, and waits for those
// probes. Builtins are recorded as up without a probe or a budget.
func (p *Prober) Round(ctx context.Context) error {
	if err := p.walkPage(ctx); err != nil {
		return err
	}
	due := p.take(p.now())
	var g errgroup.Group
	g.SetLimit(p.concurrency())
	for _, d := range due {
		if ctx.Err() != nil {
			break
		}
		if d.kind == agent.BackendBuiltin {
			p.Health.RecordProbe(d.id, runtime.ProbeResult{OK: true})
			continue
		}
		g.Go(func() error {
			_, err := p.ProbeAgent(ctx, d.id)
			if err != nil && ctx.Err() == nil {
				if errors.Is(err, store.ErrNotFound) {
					p.forget(d.id)
				} else {
					p.logger().Warn("probing an agent failed", "agent", d.id, "err", err)
				}
			}
			return nil
		})
	}
	_ = g.Wait()
	return ctx.Err()
}

// walkPage reads one page of the local agents' ids, starting a walk when
// none is under way and the last began an Interval ago (or never).
func (p *Prober) walkPage(ctx context.Context) error {
	now := p.now()
	p.mu.Lock()
	if p.sched == nil {
		p.sched = map[string]*probeEntry{}
	}
	if !p.walk.active {
		if p.walk.n > 0 && now.Sub(p.walk.started) < p.interval() {
			p.mu.Unlock()
			return nil
		}
		p.walk = probeWalk{n: p.walk.n + 1, active: true, started: now}
	}
	after, size := p.walk.after, p.pageSize()
	p.mu.Unlock()

	refs, err := p.Store.LocalRefs(ctx, store.LocalQuery{After: after, Limit: size})
	if err != nil {
		return fmt.Errorf("list local agents: %w", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range refs {
		e := p.sched[r.ID]
		if e == nil {
			e = &probeEntry{due: now, added: now} // new: due at once
			p.sched[r.ID] = e
		}
		e.kind, e.walk = r.Kind, p.walk.n
	}
	if len(refs) == size {
		p.walk.after = refs[len(refs)-1].ID
		return nil
	}
	p.walk.active = false
	ids := make(map[string]bool, len(p.sched))
	for id, e := range p.sched {
		// Not seen by this walk, and known from before it began: gone.
		if e.walk != p.walk.n && e.added.Before(p.walk.started) {
			delete(p.sched, id)
			continue
		}
		ids[id] = true
	}
	p.Health.Retain(ids)
	return nil
}

// dueProbe is an agent a tick probes.
type dueProbe struct {
	id, kind string
	due      time.Time
	used     bool
}

// take picks the agents to probe at now: every due builtin, and as many
// due others as the budget allows, used ones first, then the longest
// overdue; it moves each one's next probe an Interval on.
func (p *Prober) take(now time.Time) []dueProbe {
	used := p.Health.RecentlyUsed()
	p.mu.Lock()
	defer p.mu.Unlock()
	var builtins []dueProbe
	allow := p.allowance(now)
	pick := &topProbes{k: allow}
	probed := 0 // agents that need a probe (not builtins)
	for id, e := range p.sched {
		if e.kind != agent.BackendBuiltin && e.kind != agent.BackendCatalogue {
			probed++
		}
		if e.due.After(now) {
			continue
		}
		d := dueProbe{id: id, kind: e.kind, due: e.due, used: used[id]}
		if e.kind == agent.BackendCatalogue {
			// Nothing hosted, nothing to probe: its health stays unknown.
			e.due = now.Add(p.jitter(max(builtinEvery, p.interval())))
			continue
		}
		if e.kind == agent.BackendBuiltin {
			e.due = now.Add(p.jitter(max(builtinEvery, p.interval())))
			builtins = append(builtins, d)
			continue
		}
		pick.offer(d)
	}
	// Agents people use that the walk has not reached yet (a fresh start
	// of a big host) are due too.
	for id := range used {
		if _, known := p.sched[id]; !known {
			p.sched[id] = &probeEntry{due: now, added: now}
			pick.offer(dueProbe{id: id, due: now, used: true})
		}
	}
	p.Health.SetProbeSpacing(p.spacing(probed))
	others := pick.sorted()
	n := len(others)
	for _, d := range others {
		p.sched[d.id].due = now.Add(p.jitter(p.interval()))
		p.spent = append(p.spent, now)
	}
	p.tokens -= float64(n)
	return append(builtins, others...)
}

// topProbes keeps the k first of the due probes offered to it (used
// first, then the longest overdue): a max-heap of k, so a tick of a host
// of 100k due agents costs n log k, not a sort of n.
type topProbes struct {
	k    int
	heap []dueProbe
}

// before orders probes: used first, then the longest overdue, then id.
func (a dueProbe) before(b dueProbe) bool {
	if a.used != b.used {
		return a.used
	}
	return cmp.Or(a.due.Compare(b.due), cmp.Compare(a.id, b.id)) < 0
}

func (t *topProbes) offer(d dueProbe) {
	if t.k <= 0 {
		return
	}
	if len(t.heap) == t.k {
		if !d.before(t.heap[0]) {
			return
		}
		t.heap[0] = d
		t.down(0)
		return
	}
	t.heap = append(t.heap, d)
	for i := len(t.heap) - 1; i > 0; {
		parent := (i - 1) / 2
		if !t.heap[parent].before(t.heap[i]) {
			break
		}
		t.heap[parent], t.heap[i] = t.heap[i], t.heap[parent]
		i = parent
	}
}

// down restores the heap (the last in order at the root) below i.
func (t *topProbes) down(i int) {
	for {
		last, l, r := i, 2*i+1, 2*i+2
		if l < len(t.heap) && t.heap[last].before(t.heap[l]) {
			last = l
		}
		if r < len(t.heap) && t.heap[last].before(t.heap[r]) {
			last = r
		}
		if last == i {
			return
		}
		t.heap[i], t.heap[last] = t.heap[last], t.heap[i]
		i = last
	}
}

// sorted is what was kept, first first.
func (t *topProbes) sorted() []dueProbe {
	slices.SortFunc(t.heap, func(a, b dueProbe) int {
		if a.before(b) {
			return -1
		}
		return 1
	})
	return t.heap
}

// allowance is how many probes may start at now: what is left of the
// budget in the last minute, and of the pacing tokens. p.mu is held.
func (p *Prober) allowance(now time.Time) int {
	budget := p.budget()
	i := 0
	for i < len(p.spent) && !p.spent[i].After(now.Add(-time.Minute)) {
		i++
	}
	p.spent = p.spent[i:]
	burst := max(1, float64(budget)/6)
	if p.refilled.IsZero() {
		p.tokens = burst
	} else if dt := now.Sub(p.refilled); dt > 0 {
		p.tokens = min(burst, p.tokens+float64(budget)*dt.Minutes())
	}
	p.refilled = now
	return max(0, min(budget-len(p.spent), int(p.tokens)))
}

// forget drops id from the schedule (its backend is gone).
func (p *Prober) forget(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.sched, id)
}

// ProbeAgent probes local agent id's backend now and records the result:
// the "after saving" half of the form's Test backend button. The error is
// the store's (store.ErrNotFound: no backend, not hosted here).
func (p *Prober) ProbeAgent(ctx context.Context, id string) (runtime.ProbeResult, error) {
	b, err := p.Store.GetBackend(ctx, id)
	if err != nil {
		return runtime.ProbeResult{}, fmt.Errorf("backend of %s: %w", id, err)
	}
	res := runtime.ProbeResult{OK: true}
	if b.Kind != agent.BackendBuiltin {
		res = p.ProbeNow(ctx, b)
	}
	if ctx.Err() == nil {
		p.Health.RecordProbe(id, res)
	}
	return res, nil
}

// ProbeNow probes b once without recording it for any agent: the form's
// Test backend button, before the agent is saved. Its Message is what to
// show the owner.
func (p *Prober) ProbeNow(ctx context.Context, b agent.Backend) runtime.ProbeResult {
	res := p.Runtime.Probe(ctx, b)
	if p.Observer != nil && res.Outcome() != string(agent.CodeCanceled) {
		p.Observer.ObserveProbe(b.Kind, res)
	}
	return res
}

// spacing is how far apart one agent's probes are when probed agents
// share the budget: Interval, or a whole round of them at Budget a minute
// when that is longer (100,000 agents at 600 a minute: 2 h 47 min).
func (p *Prober) spacing(probed int) time.Duration {
	round := time.Duration(float64(probed) / float64(p.budget()) * float64(time.Minute))
	return max(p.interval(), round)
}

func (p *Prober) jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (1 - probeJitter + 2*probeJitter*rand.Float64()))
}

func (p *Prober) interval() time.Duration {
	if p.Interval <= 0 {
		return DefaultProbeInterval
	}
	return p.Interval
}

func (p *Prober) budget() int {
	if p.Budget <= 0 {
		return DefaultProbeBudget
	}
	return p.Budget
}

func (p *Prober) concurrency() int {
	if p.Concurrency <= 0 {
		return DefaultProbeConcurrency
	}
	return p.Concurrency
}

func (p *Prober) tick() time.Duration {
	if p.Tick > 0 {
		return p.Tick
	}
	return min(time.Second, p.interval()/4)
}

func (p *Prober) pageSize() int {
	if p.PageSize <= 0 || p.PageSize > store.MaxLocalPage {
		return store.MaxLocalPage
	}
	return p.PageSize
}

func (p *Prober) now() time.Time {
	if p.Now == nil {
		return time.Now()
	}
	return p.Now()
}

func (p *Prober) logger() *slog.Logger {
	if p.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return p.Logger
}
