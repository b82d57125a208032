package searchindex

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/agentsite/agentsite/store"
)

// The states Status reports (/readyz checks.search_index).
const (
	// StateLoading: the first load has not finished; searches use the
	// database.
	StateLoading = "loading"
	// StateOK: the index answers searches.
	StateOK = "ok"
	// StateRetrying: the last read of the change feed failed and Run
	// tries again after a backoff; searches use the database meanwhile.
	StateRetrying = "retrying"
)

// Backoff bounds: the first retry after ~backoffBase, doubling to
// backoffMax. A read the store deadline cut (5 s by default) under load
// is asked again soon, and a database that is down is asked twice a
// minute at most.
const (
	backoffBase = 250 * time.Millisecond
	backoffMax  = 30 * time.Second
)

// DefaultBackoff is the wait before the n-th retry in a row (n from 1):
// backoffBase doubling up to backoffMax, each drawn between half and all
// of it, so that replicas on one database that failed together do not
// retry together.
func DefaultBackoff(n int) time.Duration {
	d := backoffMax
	if n < 16 {
		d = min(backoffMax, backoffBase<<max(0, n-1))
	}
	return d/2 + rand.N(d/2+1)
}

// sleep waits d, or until ctx ends (false).
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// errKind is what Status may say of a failed read: its kind, never its
// text (which can name the database's host or user).
func errKind(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, store.ErrUnavailable):
		return "unavailable"
	}
	return "error"
}

// Status is the index's state (StateLoading, StateOK or StateRetrying)
// and, while retrying, the kind of the last failed read ("timeout",
// "unavailable" or "error"). /readyz shows both.
func (s *Store) Status() (state, errKind string) {
	s.statusMu.Lock()
	defer s.statusMu.Unlock()
	switch {
	case s.retrying.Load():
		return StateRetrying, s.lastErrKind
	case s.ready.Load():
		return StateOK, ""
	}
	return StateLoading, ""
}

// retryAfter records a failed read of op (the first of a streak is
// logged), then waits the backoff of the streak's n-th failure in a row
// without progress. It returns false when ctx ended.
func (s *Store) retryAfter(ctx context.Context, op string, err error, n int) bool {
	if ctx.Err() != nil {
		return false
	}
	kind := errKind(err)
	s.statusMu.Lock()
	first := !s.retrying.Load()
	if first {
		s.streakStart = time.Now()
	}
	s.lastErrKind = kind
	s.retrying.Store(true)
	s.statusMu.Unlock()
	s.retries.Add(1)
	if first {
		s.log.Warn("search index: reading the store failed; searches use the database, retrying with backoff until it succeeds",
			"op", op, "kind", kind, "err", err)
	}
	return s.Sleep(ctx, s.Backoff(n))
}

// recovered ends a streak of failed reads, if there was one.
func (s *Store) recovered() {
	s.statusMu.Lock()
	was, since := s.retrying.Load(), s.streakStart
	s.retrying.Store(false)
	s.lastErrKind = ""
	s.statusMu.Unlock()
	if was {
		s.log.Info("search index: reading the store again", "after", time.Since(since).Round(time.Millisecond))
	}
}

// Retries counts the failed reads of the change feed Run retried.
func (s *Store) Retries() uint64 { return s.retries.Load() }
