package heartbeat

import (
	"sync"
	"time"

	"github.com/agentsite/agentsite/agent"
)

// maxHeartbeatParts bounds the messages of one heartbeat round (one SentAt)
// that a node takes from one sender: 64 parts carry the health of 8,192
// agents (agent.MaxHeartbeatHealth each). The rest of a larger round is
// ignored; the node is alive whichever part arrives.
const maxHeartbeatParts = 64

// Bounds of the per-author state (beats, Hosts): a rogue with endless
// fresh identities must not grow it. Past maxTracked authors, those not
// heard for heardFor go, and if that is not enough, all (the host's
// admission state has the same bounds).
const (
	maxTracked = 50_000
	heardFor   = time.Hour
)

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
	first              time.Time     // the sender has been heard without a silence of countedFor since then
	declared           time.Duration // the interval the round said its sender waits after it (agentsite/status/2)
	parts              int
	soon               int // rounds refused as too soon since this one
}

// floodAfter is how many too-soon rounds a sender may send after an
// accepted one before they count as a flood: an honest sender whose send
// was delayed can land one round early, a flooder sends many.
const floodAfter = 2

func newBeats() *beats { return &beats{m: map[string]*round{}} }

// heartbeatGap is the least time between two heartbeat rounds of one
// sender that a node takes: half its own interval, and never more than
// 500 ms, so a sender configured with a shorter interval than this node's
// (every node chooses its own) is not taken for a flooder, while a flood
// is held to two rounds a second.
func heartbeatGap(interval time.Duration) time.Duration {
	return min(interval/2, 500*time.Millisecond)
}

// verdict is what beats.allow makes of one heartbeat message.
type verdict int

const (
	beatOK    verdict = iota
	beatLate          // an older round, or a part past the round's cap: gossip can deliver these late, honestly
	beatFlood         // a new round too soon after the last
)

// allow judges a heartbeat of author sent at sentAt and received at now: a
// part of the round already accepted (up to maxHeartbeatParts), or a new
// round whose sentAt is at least minGap after the last round's, and which
// arrives at least minGap/2 after it. A round too soon is dropped; past
// floodAfter of them it is a flood. The sender's clock spaces honest
// rounds by a whole interval however late the mesh delivers them; the
// arrival gap stops a rogue that writes the times in its rounds from
// sending many at once.
func (b *beats) allow(author string, sentAt, now time.Time, minGap time.Duration) verdict {
	return b.allowDeclared(author, sentAt, now, minGap, 0)
}

// allowDeclared is allow for a round of agentsite/status/2, which
// declares the interval its sender waits after it (declared; 0 on
// agentsite/status/1): the next round sooner than half of that (by sentAt, or a quarter by arrival) is dropped too,
// but is no flood, however many: a sender whose planet shrank, or that
// restarted, starts again from a shorter interval. Only rounds closer
// than minGap are a flood, so the flood bound is the same for every
// interval.
func (b *beats) allowDeclared(author string, sentAt, now time.Time, minGap, declared time.Duration) verdict {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.m[author]
	switch {
	case r != nil && r.sentAt.Equal(sentAt):
		if r.parts >= maxHeartbeatParts {
			return beatLate
		}
		r.parts++
		return beatOK
	case r != nil && sentAt.Before(r.sentAt):
		return beatLate
	case r != nil && (sentAt.Sub(r.sentAt) < minGap || now.Sub(r.acceptedAt) < minGap/2):
		r.soon++
		if r.soon > floodAfter {
			return beatFlood
		}
		return beatLate
	case r != nil && (sentAt.Sub(r.sentAt) < r.declared/2 || now.Sub(r.acceptedAt) < r.declared/4):
		return beatLate
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
	first := now
	if r != nil && now.Sub(r.acceptedAt) < countedFor {
		first = r.first
	}
	b.m[author] = &round{sentAt: sentAt, acceptedAt: now, first: first, declared: min(declared, agent.MaxHeartbeatInterval), parts: 1}
	return beatOK
}

// counted is how many authors heard within countedFor of now count toward
// the planet's size: those for whom hosts says yes (they host listings
// this node holds), and those heard for longer than settled without a
// silence of countedFor.
func (b *beats) counted(now time.Time, settled time.Duration, hosts func(author string) bool) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := 0
	for author, r := range b.m {
		if now.Sub(r.acceptedAt) >= countedFor {
			continue
		}
		if now.Sub(r.first) > settled || hosts(author) {
			c++
		}
	}
	return c
}
