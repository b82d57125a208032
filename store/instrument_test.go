package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentsite/agentsite/store"
)

// stalled is a store whose Ping never answers before its context ends.
type stalled struct{ store.Store }

func (stalled) Ping(ctx context.Context) error {
	<-ctx.Done()
	return ctx.Err()
}

// TestInstrumentDeadline: a stalled call ends at the store deadline with
// ErrUnavailable; a caller's own cancellation or earlier deadline stays
// what it was (the client gave up; the store did not fail).
func TestInstrumentDeadline(t *testing.T) {
	st := store.Instrument(stalled{}, prometheus.NewRegistry(), 50*time.Millisecond)

	start := time.Now()
	err := st.Ping(t.Context())
	if !errors.Is(err, store.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("stalled call: %v, want ErrUnavailable wrapping the deadline", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("stalled call took %v, want about 50ms", took)
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := st.Ping(ctx); errors.Is(err, store.ErrUnavailable) || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled by the caller: %v, want context.Canceled only", err)
	}

	ctx, cancel = context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer cancel()
	if err := st.Ping(ctx); errors.Is(err, store.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("caller's own deadline: %v, want DeadlineExceeded only", err)
	}
}
