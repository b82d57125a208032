package heartbeat

import (
	"sync"
	"time"
)

// Hosts is the publishers of listings this node took into its cache
// (gossip, sync, a look-up), by when it last took one: a heartbeat author
// among them counts in the planet's size at once (heartbeatInterval).
// Bounded: past maxTracked the entries older than heardFor go, and if
// that is not enough, all.
type Hosts struct {
	mu sync.Mutex
	m  map[string]time.Time
}

// NewHosts makes an empty set.
func NewHosts() *Hosts { return &Hosts{m: map[string]time.Time{}} }

// Note records that a listing of publisher is held, now.
func (h *Hosts) Note(publisher string, now time.Time) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.m[publisher]; !ok && len(h.m) >= maxTracked {
		for k, t := range h.m {
			if now.Sub(t) > heardFor {
				delete(h.m, k)
			}
		}
		if len(h.m) >= maxTracked {
			clear(h.m)
		}
	}
	h.m[publisher] = now
}

// Holds reports whether a listing of publisher was taken in.
func (h *Hosts) Holds(publisher string) bool {
	if h == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.m[publisher]
	return ok
}
