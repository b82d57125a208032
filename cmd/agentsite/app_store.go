package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/store/searchindex"
)

// storageFull is the engine's "the disk is full" state for /readyz, if it
// keeps one (SQLite).
func storageFull(st store.Store) func() bool {
	if f, ok := st.(interface{ StorageFull() bool }); ok {
		return f.StorageFull
	}
	return nil
}

// searchIndex puts the in-process search index in front of st
// (store/searchindex) and starts loading it: searches use the database
// until it has loaded, then the index. Every write of the node passes
// through it, so a search finds what the node just wrote. a.indexStatus
// is its state for /readyz. The index is kept in the data dir between
// runs (indexSnapshotFile), so a restarted node reads only the changes
// since instead of the whole catalogue (at 1M listings: ~70 s).
func (a *app) searchIndex(st store.Store, metrics prometheus.Registerer) store.Store {
	e, ok := st.(searchindex.Engine)
	if !ok {
		return st
	}
	idx := searchindex.New(e, a.logger)
	idx.SnapshotPath = filepath.Join(a.cfg.DataDir, indexSnapshotFile)
	metrics.MustRegister(idx.Collectors()...)
	a.goLoop(func(ctx context.Context) {
		if err := idx.Run(ctx); err != nil && ctx.Err() == nil {
			a.logger.Error("search index stopped; searches use the database", "err", err)
		}
	})
	a.indexStatus = idx.Status
	return idx
}

// indexSnapshotFile is the search index's snapshot in the data dir.
const indexSnapshotFile = "search-index.snap"

// cachedStore puts the read cache in front of st's network view (listings
// and nodes), the reads the portal repeats (search, counts, tags), and of
// its local agents' backends, which the runtime reads every turn: every
// write of the Sink, the sweep and registration goes through it and
// invalidates it (store.Cache). full is st with that cache in place, for
// the HTTP surfaces and the runtime, with conversations' newest messages
// kept too (checked at each read); accounts and sessions go straight to
// the engine, which bounds and records every call.
func cachedStore(st store.Store, metrics prometheus.Registerer) (network store.Network, full store.Store) {
	c := store.NewCache(st, time.Second, 10_000)
	if metrics != nil {
		for _, result := range []string{"hit", "miss"} {
			metrics.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name:        "agentsite_conversation_cache_reads_total",
				Help:        "Reads of a conversation's newest messages (a chat turn's history) answered from the read cache (hit, checked against the database's index) or from the database (miss).",
				ConstLabels: prometheus.Labels{"result": result},
			}, func() float64 {
				hits, misses := c.TailStats()
				if result == "hit" {
					return float64(hits)
				}
				return float64(misses)
			}))
		}
	}
	return c, store.Composed{
		Network: c, Backends: c.Backends(st), Accounts: st, Sessions: st, Conversations: c.Conversations(st), Memories: st, Conn: st,
	}
}

// sweepLoop applies the liveness rules every heartbeat interval: silent
// nodes' listings turn stale, expired listings offline. The Sink judges
// silence by the heartbeats it heard (in memory) and each node's own
// interval.
func (a *app) sweepLoop(ctx context.Context) {
	t := time.NewTicker(a.cfg.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := a.sink.Sweep(ctx, time.Now().UTC(), a.cfg.staleAfter(), a.cfg.RecordTTL, a.cfg.UnheardExpiry); err != nil && ctx.Err() == nil {
			a.logger.Warn("liveness sweep failed; will retry", "err", err)
		}
	}
}

// backendLookup finds a local agent's backend for the runtime; an agent
// without one is not hosted here.
func backendLookup(st store.Backends) func(ctx context.Context, agentID string) (agent.Backend, error) {
	return func(ctx context.Context, agentID string) (agent.Backend, error) {
		b, err := st.GetBackend(ctx, agentID)
		if errors.Is(err, store.ErrNotFound) {
			return b, fmt.Errorf("%w: %s", agent.ErrUnknownAgent, agentID)
		}
		return b, err
	}
}

// capacity is the node's capacity in listings (--max-listings), evicting
// from network (the read cache in front of the engine, so that an
// eviction invalidates it and the search index drops what went), its
// metrics in metrics (nil: none). nil when there is no bound.
func (a *app) capacity(network store.Network, metrics prometheus.Registerer) *store.Capacity {
	ev, ok := network.(store.Evictor)
	if !ok || a.cfg.MaxListings <= 0 {
		return nil
	}
	c := &store.Capacity{Store: ev, Max: a.cfg.MaxListings}
	if metrics != nil {
		metrics.MustRegister(c.Collectors()...)
	}
	return c
}
