package intake

import (
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// strikes counts invalid records per peer in a sliding window; a peer with
// too many is blocked. Gossip scoring alone only stops forwarding; this also
// closes the door (sync, DHT).
type strikes struct {
	mu     sync.Mutex
	counts map[peer.ID][]time.Time
}

const (
	strikeLimit  = 10
	strikeWindow = 10 * time.Minute
)

func newStrikes() *strikes { return &strikes{counts: map[peer.ID][]time.Time{}} }

// add records a strike and reports whether the peer just crossed the limit.
func (s *strikes) add(p peer.ID, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	ts := s.counts[p]
	kept := ts[:0]
	for _, t := range ts {
		if now.Sub(t) < strikeWindow {
			kept = append(kept, t)
		}
	}
	kept = append(kept, now)
	s.counts[p] = kept
	if len(s.counts) > 10_000 {
		clear(s.counts)
	}
	return len(kept) == strikeLimit
}
