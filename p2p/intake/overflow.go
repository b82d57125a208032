package intake

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// overflow is, per publisher, how many of its own records past the
// publisher rate a node lets pass unpunished: as many again as half the
// rate, refilled at the rate. An honest node paces its gossip below the
// rate (pace), so it reaches this only when the mesh delivers its records
// in a clump or this node's rate is set below the planet's default; an
// older node that does not pace, or a rogue, that sends a burst of hundreds
// of its own records still loses a point for each past it.
type overflow struct {
	perMinute int

	mu sync.Mutex
	m  map[string]*rate.Limiter
}

func newOverflow(perMinute int) *overflow {
	return &overflow{perMinute: perMinute, m: map[string]*rate.Limiter{}}
}

// forgive reports whether one more of publisher's own records over the
// rate goes unpunished.
func (o *overflow) forgive(publisher string, now time.Time) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	l, ok := o.m[publisher]
	if !ok {
		if len(o.m) >= maxTracked {
			clear(o.m) // a fresh limiter is full: the worst is one allowance more
		}
		l = rate.NewLimiter(rate.Limit(float64(o.perMinute)/60), max(o.perMinute/2, 1))
		o.m[publisher] = l
	}
	return l.AllowN(now, 1)
}
