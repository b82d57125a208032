package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentsite/agentsite/store"
)

// stall is a store call that never answers before its context ends.
func stall(ctx context.Context) error {
	<-ctx.Done()
	return ctx.Err()
}

// TestBound: a stalled call ends at the store deadline with ErrUnavailable;
// a caller's own cancellation or earlier deadline stays what it was (the
// client gave up; the store did not fail); no timeout means no deadline.
func TestBound(t *testing.T) {
	opts := store.Options{Timeout: 50 * time.Millisecond}
	call := func(ctx context.Context) error {
		ctx, end := opts.Bound(ctx)
		return end(stall(ctx))
	}

	// The caller's own deadline, far later, only ends the call if the
	// store's does not: then the error is not ErrUnavailable.
	guard, cancelGuard := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancelGuard()
	err := call(guard)
	if !errors.Is(err, store.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("stalled call: %v, want ErrUnavailable wrapping the store's deadline", err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := call(ctx); errors.Is(err, store.ErrUnavailable) || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled by the caller: %v, want context.Canceled only", err)
	}

	ctx, cancel = context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer cancel()
	if err := call(ctx); errors.Is(err, store.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("caller's own deadline: %v, want DeadlineExceeded only", err)
	}

	ctx, end := store.Options{}.Bound(t.Context())
	if _, ok := ctx.Deadline(); ok {
		t.Error("no Timeout, yet the call has a deadline")
	}
	if err := end(nil); err != nil {
		t.Errorf("end(nil) = %v", err)
	}
}

func TestStatementName(t *testing.T) {
	for sql, want := range map[string]string{
		"-- name: get_agent\nSELECT 1":      "get_agent",
		"\n-- name: upsert_record \nWITH x": "upsert_record",
		"begin":                             "begin",
		"BEGIN; SET LOCAL x = 1":            "begin",
		"commit":                            "commit",
		"rollback":                          "rollback",
		"SELECT 1":                          "unnamed",
		"":                                  "unnamed",
	} {
		if got := store.StatementName(sql); got != want {
			t.Errorf("StatementName(%q) = %q, want %q", sql, got, want)
		}
	}
}
