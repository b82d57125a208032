package registry

import (
	"context"
	"time"
)

// Re-signing is spread over the TTL: each listing is re-signed when its
// own expiry is half a TTL away, a bounded number a tick, so a host of
// 100k agents imported at once does not re-sign all of them in one pass
// (which stalls the store for everything else). The bound lets the whole set be re-signed in a quarter of
// the TTL, twice what keeping up needs, so a backlog (all imported at
// once, or after a restart) is worked off before anything lapses, and
// the expiries it hands out spread the next round over the TTL.
const (
	// refreshMinPerTick is the bound of a small host's tick.
	refreshMinPerTick = 64
	refreshMinTick    = time.Second
	refreshMaxTick    = time.Minute
)

// refreshTick is how often RunRefresh looks for due listings: a sixtieth
// of the TTL, between 1s and 1m.
func (r *Registry) refreshTick() time.Duration {
	return min(max(r.TTL/60, refreshMinTick), refreshMaxTick)
}

// RefreshTick re-signs the listings due now (expiring within half the
// TTL), at most its share: the hosted count times the tick over a quarter
// of the TTL, at least 64. It reads the due refs, no more: an idle tick
// is one look at the index of expiries that finds nothing, and only a
// tick with a backlog (64 due) counts the hosted listings for its share.
func (r *Registry) RefreshTick(ctx context.Context) (int, error) {
	n, err := r.RefreshDue(ctx, r.TTL/2, refreshMinPerTick)
	if err != nil || n < refreshMinPerTick {
		return n, err
	}
	c, err := r.Store.CountLocal(ctx)
	if err != nil {
		return n, err
	}
	quarter := max(r.TTL/4, time.Second)
	share := int((int64(c.N)*int64(r.refreshTick()) + int64(quarter) - 1) / int64(quarter))
	if share <= n {
		return n, nil
	}
	more, err := r.RefreshDue(ctx, r.TTL/2, share-n)
	return n + more, err
}

// RunRefresh re-signs local listings as they come due (RefreshTick), every
// tick, until ctx ends.
func (r *Registry) RunRefresh(ctx context.Context) {
	t := time.NewTicker(r.refreshTick())
	defer t.Stop()
	for {
		if n, err := r.RefreshTick(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			r.logger().Warn("refreshing local agents failed; will retry", "err", err)
		} else if n > 0 {
			r.logger().Debug("refreshed local agents", "count", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
