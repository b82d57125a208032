package store

import (
	"slices"
	"sync"
	"time"

	"github.com/agentsite/agentsite/agent"
)

// heardFlushEvery is how far the nodes table's last_heartbeat may lag
// behind when this node last heard a node (Sink.Sweep writes it, one
// statement for every node): the liveness rules read the memory, so only
// the /nodes page's "last heartbeat" and a restart see the lag.
const heardFlushEvery = time.Minute

// recountEvery is how often a heard node whose agents_hosted was capped
// (its claim is above what this node holds of it: a mirror still filling)
// is counted again, with a write, while its heartbeats say nothing new.
const recountEvery = time.Minute

// maxHeard bounds the nodes the Sink remembers; past it, those not heard
// for an hour are forgotten (they get a write on their next heartbeat).
const maxHeard = 100_000

// heardNode is what the Sink remembers of a node it heard: what it last
// wrote of it, and when it last heard it.
type heardNode struct {
	last     time.Time     // last heartbeat heard
	interval time.Duration // the interval it declares (0: none, an older node)
	flushed  time.Time     // last_heartbeat as written
	counted  time.Time     // when agents_hosted was last counted
	version  string
	name     string
	addrs    []string
	claim    int // agents_hosted claimed
	hosted   int // agents_hosted stored (claim capped)
	online   bool
}

// heardTable is the Sink's memory of the nodes it hears: a heartbeat that
// changes nothing in the node's row costs no write (docs/architecture.md
// "Heartbeats"), and Sweep judges silence by it.
type heardTable struct {
	mu sync.Mutex
	m  map[string]*heardNode
}

// fresh records hb heard at now and reports whether the row already says
// everything it does (then nothing is written). A heartbeat without
// addresses (agentsite/status/2 sends them when they change) keeps them.
func (h *heardTable) fresh(hb *agent.Heartbeat, now time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.m[hb.PeerID]
	if e == nil || !e.online || e.version != hb.Version || e.name != hb.Name || e.claim != hb.AgentsHosted ||
		hb.Addrs != nil && !slices.Equal(e.addrs, hb.Addrs) ||
		e.hosted < e.claim && now.Sub(e.counted) >= recountEvery {
		return false
	}
	if now.After(e.last) {
		e.last = now
	}
	e.interval = hb.Interval()
	return true
}

// addrs is what the table remembers of peer's addresses (nil: nothing).
func (h *heardTable) addrs(peer string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e := h.m[peer]; e != nil {
		return e.addrs
	}
	return nil
}

// wrote records that the row of n (from hb) was written at now.
func (h *heardTable) wrote(hb *agent.Heartbeat, n Node, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = map[string]*heardNode{}
	}
	if _, ok := h.m[n.PeerID]; !ok && len(h.m) >= maxHeard {
		for k, e := range h.m {
			if now.Sub(e.last) > time.Hour {
				delete(h.m, k)
			}
		}
		if len(h.m) >= maxHeard {
			clear(h.m)
		}
	}
	h.m[n.PeerID] = &heardNode{
		last: now, interval: hb.Interval(), flushed: now, counted: now,
		version: n.Version, name: n.Name, addrs: n.Addrs, claim: hb.AgentsHosted, hosted: n.AgentsHosted, online: true,
	}
}

// lastHeard is when peer was last heard, by the table, and the interval
// it declares; ok is false when the table does not know it.
func (h *heardTable) lastHeard(peer string) (last time.Time, interval time.Duration, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.m[peer]
	if e == nil {
		return time.Time{}, 0, false
	}
	return e.last, e.interval, true
}

// claimOf is the agents_hosted peer's last heartbeat claimed (not capped
// at what this node holds), if the table knows it.
func (h *heardTable) claimOf(peer string) (int, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e := h.m[peer]; e != nil {
		return e.claim, true
	}
	return 0, false
}

// online reports whether the table says peer's row is online.
func (h *heardTable) online(peer string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.m[peer]
	return e != nil && e.online
}

// silenced forgets that peer's row says online: Sweep turned it stale,
// so its next heartbeat writes.
func (h *heardTable) silenced(peer string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e := h.m[peer]; e != nil {
		e.online = false
	}
}

// unflushed is the nodes whose last_heartbeat lags their last heartbeat
// by heardFlushEvery or more at now, by peer; they count as flushed.
func (h *heardTable) unflushed(now time.Time) map[string]time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string]time.Time{}
	for k, e := range h.m {
		if e.online && e.last.Sub(e.flushed) >= heardFlushEvery {
			out[k] = e.last
			e.flushed = e.last
		}
	}
	return out
}
