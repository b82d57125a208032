package httpkit

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Rates is a token bucket per key (IP or account) for chat turns, which
// arrive over long-lived WebSockets and MCP sessions where per-request
// middleware does not apply. Idle buckets are dropped so the map stays
// small.
type Rates struct {
	mu      sync.Mutex
	perMin  int
	buckets map[string]*bucket
	swept   time.Time
}

type bucket struct {
	lim  *rate.Limiter
	seen time.Time
}

// NewRates allows perMinute per key, with a burst of a sixth of it (at
// least 5).
func NewRates(perMinute int) *Rates {
	return &Rates{perMin: perMinute, buckets: map[string]*bucket{}}
}

// Allow reports whether key may send one more now.
func (k *Rates) Allow(key string, now time.Time) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if now.Sub(k.swept) > time.Minute {
		for key, b := range k.buckets {
			if now.Sub(b.seen) > 5*time.Minute {
				delete(k.buckets, key)
			}
		}
		k.swept = now
	}
	b, ok := k.buckets[key]
	if !ok {
		burst := max(k.perMin/6, 5)
		b = &bucket{lim: rate.NewLimiter(rate.Limit(float64(k.perMin)/60), burst)}
		k.buckets[key] = b
	}
	b.seen = now
	return b.lim.AllowN(now, 1)
}
