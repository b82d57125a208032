package store

import (
	"container/list"
	"sync"
	"time"
)

// Bounds of the read cache's agents (Cache.GetAgent).
const (
	// AgentCacheMax bounds the listings kept: the agents people are
	// chatting with, not the catalogue. Any peer can make the node read
	// a listing (a turn names any id), so the LRU is bounded and a flood
	// of distinct ids only pushes the old ones out.
	AgentCacheMax = 4096
	// AgentCacheTTL bounds how long a listing is served when nothing
	// invalidated it: the writes the change feed does not number and
	// this process did not make (another process on the same database
	// storing a new version with the same text, or a heartbeat's
	// last_seen).
	AgentCacheTTL = 30 * time.Second
)

// ChangeMarker is an engine that follows the database's change feed
// (store/searchindex): ChangeMark moves whenever it applied a change of
// any listing, whichever process wrote it.
type ChangeMarker interface {
	ChangeMark() uint64
}

// idLRU keeps values by id (the listings GetAgent read, the backends
// the runtime reads), least recently used out first. An entry serves only
// while the generation it was read at (the writes of this process through
// the cache that can change it) and the change feed's mark (every
// numbered change of any process) are those it was read at, and for ttl.
// Both are taken before the read, so a write that races the read leaves
// an entry that never serves.
type idLRU[V any] struct {
	max  int
	ttl  time.Duration
	feed ChangeMarker

	mu    sync.Mutex
	byID  map[string]*list.Element
	order *list.List // of *lruEntry[V], most recently used first
}

type lruEntry[V any] struct {
	id      string
	v       V
	gen     uint64
	mark    uint64
	expires time.Time
}

func newIDLRU[V any](max int, ttl time.Duration, feed ChangeMarker) idLRU[V] {
	return idLRU[V]{max: max, ttl: ttl, feed: feed, byID: map[string]*list.Element{}, order: list.New()}
}

// mark is the change feed's mark now (0 without a feed).
func (a *idLRU[V]) mark() uint64 {
	if a.feed == nil {
		return 0
	}
	return a.feed.ChangeMark()
}

func (a *idLRU[V]) get(id string, gen, mark uint64, now time.Time) (V, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var zero V
	el, ok := a.byID[id]
	if !ok {
		return zero, false
	}
	e := el.Value.(*lruEntry[V])
	if e.gen != gen || e.mark != mark || !now.Before(e.expires) {
		a.order.Remove(el)
		delete(a.byID, id)
		return zero, false
	}
	a.order.MoveToFront(el)
	return e.v, true
}

func (a *idLRU[V]) put(id string, v V, gen, mark uint64, now time.Time) {
	if a.max <= 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if el, ok := a.byID[id]; ok {
		a.order.Remove(el)
		delete(a.byID, id)
	}
	for a.order.Len() >= a.max {
		old := a.order.Back()
		a.order.Remove(old)
		delete(a.byID, old.Value.(*lruEntry[V]).id)
	}
	a.byID[id] = a.order.PushFront(&lruEntry[V]{id: id, v: v, gen: gen, mark: mark, expires: now.Add(a.ttl)})
}

// len is how many entries it holds.
func (a *idLRU[V]) len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.order.Len()
}

// AgentsLen is how many listings the agent LRU holds (tests, metrics).
func (c *Cache) AgentsLen() int { return c.agents.len() }
