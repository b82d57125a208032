package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/store/postgres"
	"github.com/agentsite/agentsite/store/postgres/pgtest"
)

// TestSavepointRollbackAfterCancel: a store call of a batch whose context
// ends while it runs (the store deadline, under load) is undone alone,
// and the batch goes on and commits the calls after it. Before, the
// rollback to the savepoint ran on the ended context and failed, so the
// failed call's write stayed in the batch and was committed with it.
func TestSavepointRollbackAfterCancel(t *testing.T) {
	st := pgtest.Open(t)
	ctx := t.Context()
	const insert = `INSERT INTO agent_backends (agent_id, config) VALUES ($1, '{"kind":"builtin","builtin":"echo"}')`
	err := st.InBatch(ctx, func(ctx context.Context, tx store.Tx) error {
		callCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		err := postgres.InCallSavepoint(callCtx, tx, func(exec func(string, ...any) error) error {
			if err := exec(insert, "failed-call"); err != nil {
				return err
			}
			cancel() // its deadline passes before the call ends
			return callCtx.Err()
		})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the failed call returned %v, want its context's end", err)
		}
		return tx.PutBackend(ctx, "next-call", agent.Backend{Kind: agent.BackendBuiltin, Builtin: "echo"})
	})
	if err != nil {
		t.Fatalf("the batch failed: %v", err)
	}
	if _, err := st.GetBackend(ctx, "failed-call"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the failed call's write: %v, want it undone (not found)", err)
	}
	if _, err := st.GetBackend(ctx, "next-call"); err != nil {
		t.Errorf("the next call's write: %v, want it committed", err)
	}
}
