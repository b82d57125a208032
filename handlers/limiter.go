package handlers

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// keyedLimiter is a token bucket per key (IP or account) for chat turns,
// which arrive over long-lived WebSockets where per-request middleware does
// not apply. Idle buckets are dropped so the map stays small.
type keyedLimiter struct {
	mu      sync.Mutex
	perMin  int
	buckets map[string]*bucket
	swept   time.Time
}

type bucket struct {
	lim  *rate.Limiter
	seen time.Time
}

func newKeyedLimiter(perMinute int) *keyedLimiter {
	return &keyedLimiter{perMin: perMinute, buckets: map[string]*bucket{}}
}

// allow reports whether key may send one more turn now.
func (k *keyedLimiter) allow(key string, now time.Time) bool {
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
