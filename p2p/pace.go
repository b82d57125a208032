package p2p

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// ownGossipPerMinute and ownGossipBurst pace the gossip of this node's own
// records (Node.Announce): half of the publisher rate peers accept by
// default (Admission.PublisherPerMinute, 120 a minute with a burst of
// 120), so that a node's own gossip is never taken for a flood, even
// when the mesh delivers it in clumps. What does not fit rides the sync.
const (
	ownGossipPerMinute = 60
	ownGossipBurst     = 60
)

// pace is the token bucket in front of the gossip of own records. It
// never waits: a record over it is left to the sync. It counts the records
// it deferred, for a log line at most once a minute.
type pace struct {
	lim *rate.Limiter

	mu     sync.Mutex
	held   int       // deferred since the last log line
	logged time.Time // the last log line
}

func newPace() *pace {
	return &pace{lim: rate.NewLimiter(rate.Limit(float64(ownGossipPerMinute)/60), ownGossipBurst)}
}

// allow takes a token if one is there.
func (p *pace) allow(now time.Time) bool {
	if p == nil {
		return true
	}
	return p.lim.AllowN(now, 1)
}

// deferred counts one record deferred to the sync and returns how many to
// report now: those since the last report once a minute has passed, else
// 0.
func (p *pace) deferred(now time.Time) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held++
	if now.Sub(p.logged) < time.Minute {
		return 0
	}
	k := p.held
	p.held, p.logged = 0, now
	return k
}
