package registry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/runtime"
	"github.com/agentsite/agentsite/store"
)

// ProbeStore is what the prober reads: this node's agents and their
// backends (registry.Store has both).
type ProbeStore interface {
	ListLocal(ctx context.Context) ([]store.Listing, error)
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
	// probeJitter spreads the rounds of nodes started together by ±10%.
	probeJitter = 0.1
)

// Prober probes this node's own agents, every Interval, and records what
// it finds in Health: the active half of agent health (DESIGN "Agent
// health"). It never probes other nodes' agents: their hosts do, and
// their heartbeats say what they found. Set Store, Runtime and Health
// before use.
type Prober struct {
	Store   ProbeStore
	Runtime Probes
	Health  *Health
	// Interval is the time between rounds, jittered by ±10%. Default 60s.
	Interval time.Duration
	// Concurrency bounds the probes in flight. Default 8.
	Concurrency int
	// Observer, if set, hears every probe (not builtins, which need none).
	Observer ProbeObserver
	Logger   *slog.Logger
}

// Run probes every local agent now, then every Interval, until ctx ends.
// A round that takes longer than the interval (backends timing out) is
// followed by the next one at once, still at most Concurrency probes at a
// time.
func (p *Prober) Run(ctx context.Context) {
	interval := p.Interval
	if interval <= 0 {
		interval = DefaultProbeInterval
	}
	for {
		start := time.Now()
		if err := p.Round(ctx); err != nil && ctx.Err() == nil {
			p.logger().Warn("probing local agents failed; will retry", "err", err)
		}
		wait := time.Duration(float64(interval)*(1-probeJitter+2*probeJitter*rand.Float64())) - time.Since(start)
		t := time.NewTimer(max(wait, 0))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// Round probes each local agent once and records the results; builtins
// are recorded as up without a probe. Agents no longer hosted are
// forgotten.
func (p *Prober) Round(ctx context.Context) error {
	ls, err := p.Store.ListLocal(ctx)
	if err != nil {
		return fmt.Errorf("list local agents: %w", err)
	}
	ids := make(map[string]bool, len(ls))
	for _, l := range ls {
		ids[l.Record.ID] = true
	}
	p.Health.Retain(ids)
	limit := p.Concurrency
	if limit <= 0 {
		limit = DefaultProbeConcurrency
	}
	var g errgroup.Group
	g.SetLimit(limit)
	for _, l := range ls {
		if ctx.Err() != nil {
			break
		}
		g.Go(func() error {
			_, err := p.ProbeAgent(ctx, l.Record.ID)
			if err != nil && !errors.Is(err, store.ErrNotFound) && ctx.Err() == nil {
				p.logger().Warn("probing an agent failed", "agent", l.Record.ID, "err", err)
			}
			return nil
		})
	}
	_ = g.Wait()
	return ctx.Err()
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

func (p *Prober) logger() *slog.Logger {
	if p.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return p.Logger
}
