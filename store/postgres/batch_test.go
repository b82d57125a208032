package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/store/postgres/pgtest"
)

// TestBatchWholeQueuedWriteFails: a whole batch sends a backend write
// with the next statement (or at commit); when Postgres refuses it (a NUL
// in jsonb), the batch fails and nothing of it stays, even if the
// function never saw the error.
func TestBatchWholeQueuedWriteFails(t *testing.T) {
	st := pgtest.Open(t)
	var b store.Batcher = st
	ctx := t.Context()
	bad := agent.Backend{Kind: agent.BackendBuiltin, Builtin: "nul\x00byte"}
	for name, next := range map[string]func(ctx context.Context, tx store.Tx) error{
		"at commit": func(context.Context, store.Tx) error { return nil },
		"with the next call": func(ctx context.Context, tx store.Tx) error {
			return tx.PutBackend(ctx, "other-agent", agent.Backend{Kind: agent.BackendBuiltin, Builtin: "echo"})
		},
	} {
		t.Run(name, func(t *testing.T) {
			err := b.InBatchWhole(ctx, func(ctx context.Context, tx store.Tx) error {
				_ = tx.PutBackend(ctx, "good-agent", agent.Backend{Kind: agent.BackendBuiltin, Builtin: "echo"})
				_ = tx.PutBackend(ctx, "bad-agent", bad)
				_ = next(ctx, tx)
				return nil
			})
			if err == nil {
				t.Fatal("InBatchWhole = nil, want the refused write's error")
			}
			for _, id := range []string{"good-agent", "bad-agent", "other-agent"} {
				if _, err := st.GetBackend(ctx, id); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("backend %s after a failed batch: %v, want not found", id, err)
				}
			}
		})
	}
}
