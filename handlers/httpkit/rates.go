package httpkit

import (
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/agentsite/agentsite/agent"
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
	return k.bucket(key, now).lim.AllowN(now, 1)
}

// bucket is key's bucket, made if need be; k.mu is held.
func (k *Rates) bucket(key string, now time.Time) *bucket {
	b, ok := k.buckets[key]
	if !ok {
		burst := max(k.perMin/6, 5)
		b = &bucket{lim: rate.NewLimiter(rate.Limit(float64(k.perMin)/60), burst)}
		k.buckets[key] = b
	}
	b.seen = now
	return b
}

// charge takes n from key's budget whether it has them or not: turns that
// ran already. The debt is paid before key may send again.
func (k *Rates) charge(key string, n int, now time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	lim := k.bucket(key, now).lim
	for n > 0 { // a reservation takes at most a burst
		m := min(n, lim.Burst())
		lim.ReserveN(now, m)
		n -= m
	}
}

// Quota is the chat budget of one client, under each of keys (its owner,
// its IP: the keys the surface admitted its message with), for the
// delegated turns of that message (chat.Request.Quota).
func (k *Rates) Quota(now func() time.Time, keys ...string) agent.Quota {
	return quota{rates: k, now: now, keys: keys}
}

type quota struct {
	rates *Rates
	now   func() time.Time
	keys  []string
}

// Allow implements agent.Quota.
func (q quota) Allow() bool {
	now := q.now()
	for _, key := range q.keys {
		if !q.rates.Allow(key, now) {
			return false
		}
	}
	return true
}

// Charge implements agent.Quota.
func (q quota) Charge(n int) {
	if n <= 0 {
		return
	}
	now := q.now()
	for _, key := range q.keys {
		q.rates.charge(key, n, now)
	}
}
