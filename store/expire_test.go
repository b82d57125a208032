package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentsite/agentsite/store"
)

// ExpireInBatches takes a backlog one bounded statement at a time until a
// step expires fewer than a batch, and keeps the count of the steps that
// committed when a later one fails.
func TestExpireInBatches(t *testing.T) {
	backlog := 2*store.ExpireBatch + 7
	steps := 0
	step := func(context.Context) (int, error) {
		steps++
		n := min(backlog, store.ExpireBatch)
		backlog -= n
		return n, nil
	}
	n, err := store.ExpireInBatches(t.Context(), step)
	if err != nil || n != 2*store.ExpireBatch+7 || steps != 3 {
		t.Fatalf("ExpireInBatches = %d, %v in %d steps; want %d in 3", n, err, steps, 2*store.ExpireBatch+7)
	}
	failing := errors.New("deadline")
	steps = 0
	n, err = store.ExpireInBatches(t.Context(), func(context.Context) (int, error) {
		steps++
		if steps == 2 {
			return 0, failing
		}
		return store.ExpireBatch, nil
	})
	if !errors.Is(err, failing) || n != store.ExpireBatch {
		t.Fatalf("with the second step failing: %d, %v; want %d and the error", n, err, store.ExpireBatch)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if n, err := store.ExpireInBatches(ctx, func(context.Context) (int, error) { return store.ExpireBatch, nil }); !errors.Is(err, context.Canceled) || n != store.ExpireBatch {
		t.Fatalf("with ctx ended: %d, %v", n, err)
	}
}
