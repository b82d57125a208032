package registry

import (
	"cmp"
	"container/heap"
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
	// 100k agents a minute would be 1,700 probes a second.
	DefaultProbeBudget = 600
	// probeJitter spreads each agent's probes by ±10%.
	probeJitter = 0.1
)

// Prober probes this node's own agents and records what it finds in
// Health: the active half of agent health (docs/architecture.md "Agent health"). It
// never probes other nodes' agents: their hosts do, and their heartbeats
// say what they found. Set Store, Runtime and Health before use.
//
// It keeps each agent's next probe in memory, in a heap by due time, so a
// tick costs what is due, not what is hosted: an idle host of 100k
// agents reads nothing and looks at nothing but the heap's top. It
// learns which agents there are by walking their ids once at start, one
// page a tick, and again every Resync (another replica's agents, one
// deleted behind its back); between walks the registry tells it of each
// agent created, changed or deleted (AgentChanged, AgentDeleted). A tick
// probes the agents that are due, those that people used lately (real
// turns in Health's recent window) first, then the longest overdue,
// within the Budget: at most Budget probes in any minute, paced at
// Budget a minute. An agent is due Interval (±10%) after its last probe;
// past the budget, every agent is probed in turn, less often. Builtins
// need no probe: each is marked up once (Health.RecordBuiltin), outside
// the budget.
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
	// Resync is how often the walk of every local agent's id runs again
	// after the first. Default 1h, at least Interval.
	Resync time.Duration
	// Observer, if set, hears every probe (not builtins, which need none).
	Observer ProbeObserver
	Logger   *slog.Logger
	// Now is the clock of the schedule and the budget. Default time.Now.
	Now func() time.Time

	mu    sync.Mutex
	sched map[string]*probeEntry
	// probes holds the agents with a backend to probe, builtins the
	// builtins, each soonest due first; an agent with nothing hosted
	// (catalogue) is in neither.
	probes, builtins dueHeap
	walk             probeWalk
	// spent holds when each of the last Budget probes started, oldest
	// first: the window the budget is counted over.
	spent []time.Time
	// tokens paces the budget: Budget a minute, at most a sixth of it
	// at once.
	tokens   float64
	refilled time.Time
}

// DefaultProbeResync is how often the prober walks every local agent's id
// again: the registry tells it of every change it makes, so the walk
// only catches what it cannot (a replica's agents on a shared database).
// At 100k agents a walk reads 100 pages.
const DefaultProbeResync = time.Hour

// probeEntry is one local agent's place in the schedule.
type probeEntry struct {
	id    string
	kind  string
	due   time.Time
	walk  uint64    // the last walk that saw the agent
	added time.Time // when the prober first heard of it
	heap  *dueHeap  // the heap it is in; nil: none
	index int       // its place in heap
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

// Round is one tick: while a walk of the local agents is under way, it
// reads the walk's next page (forgetting, at the end of a walk, the
// agents no longer hosted), then probes the agents that are due, within
// the budget, and waits for those probes. Builtins are recorded as up
// without a probe or a budget.
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
			p.Health.RecordBuiltin(d.id)
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

// AgentChanged implements Schedule: local agent id was created or
// changed, its backend now of kind; it is probed at the next tick.
func (p *Prober) AgentChanged(id, kind string) {
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	e, _ := p.entry(id, now)
	p.rekind(e, kind)
	p.place(e, now)
}

// AgentDeleted implements Schedule: local agent id is gone; it is no
// longer probed and its health is forgotten.
func (p *Prober) AgentDeleted(id string) {
	p.forget(id)
	p.Health.Forget(id)
}

// entry is id's entry, added (due at now) if new (fresh). p.mu is held.
func (p *Prober) entry(id string, now time.Time) (e *probeEntry, fresh bool) {
	if p.sched == nil {
		p.sched = map[string]*probeEntry{}
	}
	if e = p.sched[id]; e == nil {
		e = &probeEntry{id: id, due: now, added: now}
		p.sched[id] = e
		fresh = true
	}
	return e, fresh
}

// rekind sets e's backend kind; a builtin that becomes another kind
// loses its health (marked up once, it would stay healthy unprobed).
// p.mu is held.
func (p *Prober) rekind(e *probeEntry, kind string) {
	if e.kind == agent.BackendBuiltin && kind != agent.BackendBuiltin {
		p.Health.Forget(e.id)
	}
	e.kind = kind
}

// place puts e in the heap its kind belongs in, due at due. p.mu is held.
func (p *Prober) place(e *probeEntry, due time.Time) {
	var h *dueHeap
	switch e.kind {
	case agent.BackendCatalogue: // nothing hosted, nothing to probe: its health stays unknown
	case agent.BackendBuiltin:
		h = &p.builtins
	default:
		h = &p.probes
	}
	e.due = due
	if e.heap != h && e.heap != nil {
		heap.Remove(e.heap, e.index)
		e.heap = nil
	}
	switch {
	case h == nil:
	case e.heap == h:
		heap.Fix(h, e.index)
	default:
		e.heap = h
		heap.Push(h, e)
	}
}

// walkPage reads one page of the local agents' ids, starting a walk when
// none is under way and the last began a Resync ago (or never).
func (p *Prober) walkPage(ctx context.Context) error {
	now := p.now()
	p.mu.Lock()
	if !p.walk.active {
		if p.walk.n > 0 && now.Sub(p.walk.started) < p.resync() {
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
		e, fresh := p.entry(r.ID, now)
		e.walk = p.walk.n
		if fresh || e.kind != r.Kind {
			p.rekind(e, r.Kind)
			p.place(e, now)
		}
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
			p.drop(e)
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
// overdue; it moves each one's next probe an Interval on. It looks at
// the used agents and the heaps' due tops only.
func (p *Prober) take(now time.Time) []dueProbe {
	used := p.Health.RecentlyUsed()
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []dueProbe
	// A builtin is marked up once (Health.RecordBuiltin) and leaves the
	// heap until its kind changes.
	for len(p.builtins) > 0 {
		e := heap.Pop(&p.builtins).(*probeEntry)
		e.heap = nil
		out = append(out, dueProbe{id: e.id, kind: e.kind, due: e.due})
	}
	allow := p.allowance(now)
	// Agents people use first, the walk's or not yet (a fresh start of
	// a big host): a few, sorted.
	var first []dueProbe
	for id := range used {
		if e, fresh := p.entry(id, now); fresh {
			p.place(e, now)
		}
		e := p.sched[id]
		if e.heap == &p.probes && !e.due.After(now) {
			first = append(first, dueProbe{id: id, kind: e.kind, due: e.due, used: true})
		}
	}
	slices.SortFunc(first, func(a, b dueProbe) int { return cmp.Or(a.due.Compare(b.due), cmp.Compare(a.id, b.id)) })
	first = first[:min(len(first), allow)]
	others := first
	for _, d := range first {
		p.place(p.sched[d.id], now.Add(p.jitter(p.interval())))
	}
	for len(others) < allow && len(p.probes) > 0 && !p.probes[0].due.After(now) {
		e := p.probes[0]
		others = append(others, dueProbe{id: e.id, kind: e.kind, due: e.due})
		p.place(e, now.Add(p.jitter(p.interval())))
	}
	p.Health.SetProbeSpacing(p.spacing(len(p.probes)))
	for range others {
		p.spent = append(p.spent, now)
	}
	p.tokens -= float64(len(others))
	return append(out, others...)
}

// dueHeap is a min-heap of schedule entries by due time, then id
// (container/heap).
type dueHeap []*probeEntry

func (h dueHeap) Len() int { return len(h) }
func (h dueHeap) Less(i, j int) bool {
	return cmp.Or(h[i].due.Compare(h[j].due), cmp.Compare(h[i].id, h[j].id)) < 0
}
func (h dueHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *dueHeap) Push(x any) {
	e := x.(*probeEntry)
	e.index = len(*h)
	*h = append(*h, e)
}
func (h *dueHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return e
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
	if e := p.sched[id]; e != nil {
		p.drop(e)
	}
}

// drop takes e out of the schedule. p.mu is held.
func (p *Prober) drop(e *probeEntry) {
	if e.heap != nil {
		heap.Remove(e.heap, e.index)
		e.heap = nil
	}
	delete(p.sched, e.id)
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

func (p *Prober) resync() time.Duration {
	if p.Resync <= 0 {
		return max(DefaultProbeResync, p.interval())
	}
	return max(p.Resync, p.interval())
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
