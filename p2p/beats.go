package p2p

import (
	"sync"
	"time"
)

// maxHeartbeatParts bounds the messages of one heartbeat round (one SentAt)
// that a node takes from one sender: 64 parts carry the health of 8,192
// agents (agent.MaxHeartbeatHealth each). The rest of a larger round is
// ignored; the node is alive whichever part arrives.
const maxHeartbeatParts = 64

// beats holds, per heartbeat author, its last accepted round, so that a
// node takes at most one heartbeat round per peer per half interval
// (docs/architecture.md "Peers are adversaries"): 912 valid heartbeats a
// second from one peer were processed and forwarded by every node, two
// writes each, before it.
type beats struct {
	mu sync.Mutex
	m  map[string]*round
}

type round struct {
	sentAt, acceptedAt time.Time
	parts              int
}

func newBeats() *beats { return &beats{m: map[string]*round{}} }

// allow reports whether a heartbeat of author sent at sentAt may be taken
// at now: a part of the round already accepted (up to maxHeartbeatParts),
// or a new round at least minGap after the last one.
func (b *beats) allow(author string, sentAt, now time.Time, minGap time.Duration) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.m[author]
	switch {
	case r != nil && r.sentAt.Equal(sentAt):
		if r.parts >= maxHeartbeatParts {
			return false
		}
		r.parts++
		return true
	case r != nil && now.Sub(r.acceptedAt) < minGap:
		return false
	case r != nil && sentAt.Before(r.sentAt):
		return false // an older round overtaken by a newer one
	}
	if r == nil && len(b.m) >= maxTracked {
		for k, old := range b.m {
			if now.Sub(old.acceptedAt) > heardFor {
				delete(b.m, k)
			}
		}
		if len(b.m) >= maxTracked {
			clear(b.m)
		}
	}
	b.m[author] = &round{sentAt: sentAt, acceptedAt: now, parts: 1}
	return true
}
