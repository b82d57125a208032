package store

import (
	"context"
	"time"

	"github.com/agentsite/agentsite/agent"
)

// Backends is next (the engine's backends) with the local agents' backends
// kept in c's memory: the host's runtime reads its agent's backend at
// every turn (docs/architecture.md §6, "A chat turn"), and reading it from
// SQLite was a twentieth of a local turn. Put and Delete through it, and
// every batch through c.Batcher (the registry's bulk path, whose
// transaction writes backends), invalidate what it holds once they ended;
// another process writes a backend only with its listing (registration,
// import), which the change feed shows. A backend read is not cached
// while absent (a turn can name any id). Callers must treat a backend's
// slices as read-only (it may be shared).
func (c *Cache) Backends(next Backends) Backends { return cachedBackends{c: c, next: next} }

type cachedBackends struct {
	c    *Cache
	next Backends
}

// GetBackend implements Backends from the LRU (bounded like the agents'
// by AgentCacheMax and AgentCacheTTL).
func (b cachedBackends) GetBackend(ctx context.Context, agentID string) (agent.Backend, error) {
	gen, mark := b.c.bgen.Load(), b.c.backends.mark()
	if be, ok := b.c.backends.get(agentID, gen, mark, time.Now()); ok {
		return be, nil
	}
	be, err := b.next.GetBackend(ctx, agentID)
	if err == nil {
		b.c.backends.put(agentID, be, gen, mark, time.Now())
	}
	return be, err
}

// PutBackend implements Backends and invalidates the backends held.
func (b cachedBackends) PutBackend(ctx context.Context, agentID string, be agent.Backend) error {
	defer b.c.bgen.Add(1)
	return b.next.PutBackend(ctx, agentID, be)
}

// DeleteBackend implements Backends and invalidates the backends held.
func (b cachedBackends) DeleteBackend(ctx context.Context, agentID string) error {
	defer b.c.bgen.Add(1)
	return b.next.DeleteBackend(ctx, agentID)
}

// BackendsLen is how many backends the LRU holds (tests).
func (c *Cache) BackendsLen() int { return c.backends.len() }
