package sqlite

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

// TestSavepointRollbackAfterCancel: a store call of a batch whose context
// ends while it runs (the store deadline, under load) is undone alone,
// and the batch goes on and commits the calls after it. Before, the
// rollback to the savepoint ran on the ended context and failed, so the
// failed call's write stayed in the batch and was committed with it.
func TestSavepointRollbackAfterCancel(t *testing.T) {
	ctx := t.Context()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "agentsite.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const insert = `INSERT INTO agent_backends (agent_id, config, updated_at) VALUES (?, '{"kind":"builtin","builtin":"echo"}', ?)`
	err = db.InBatch(ctx, func(ctx context.Context, tx store.Tx) error {
		b := tx.(batchTx).b
		callCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		err := b.inSavepoint(callCtx, func(ctx context.Context, ex execer) error {
			if _, err := ex.ExecContext(ctx, insert, "failed-call", time.Now().UnixNano()); err != nil {
				return err
			}
			cancel() // its deadline passes before the call ends
			return ctx.Err()
		})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the failed call returned %v, want its context's end", err)
		}
		return tx.PutBackend(ctx, "next-call", agent.Backend{Kind: agent.BackendBuiltin, Builtin: "echo"})
	})
	if err != nil {
		t.Fatalf("the batch failed: %v", err)
	}
	if _, err := db.GetBackend(ctx, "failed-call"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the failed call's write: %v, want it undone (not found)", err)
	}
	if _, err := db.GetBackend(ctx, "next-call"); err != nil {
		t.Errorf("the next call's write: %v, want it committed", err)
	}
}

// TestBatchLostWhenSQLiteRolledBack: when SQLite itself rolled the whole
// transaction back inside a store call (as it does when a statement is
// interrupted), the savepoint cannot be undone; the batch then fails
// every later call and its commit, and nothing is written outside a
// transaction. Before, the later calls ran in autocommit (each written at
// once) and only the commit failed: "cannot commit - no transaction is
// active", with part of the batch stored.
func TestBatchLostWhenSQLiteRolledBack(t *testing.T) {
	ctx := t.Context()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "agentsite.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var next error
	err = db.InBatch(ctx, func(ctx context.Context, tx store.Tx) error {
		b := tx.(batchTx).b
		_ = b.inSavepoint(ctx, func(ctx context.Context, ex execer) error {
			if _, err := ex.ExecContext(ctx, "ROLLBACK"); err != nil { // what an interrupt does
				return err
			}
			return errors.New("interrupted")
		})
		next = tx.PutBackend(ctx, "next-call", agent.Backend{Kind: agent.BackendBuiltin, Builtin: "echo"})
		return nil
	})
	if err == nil || next == nil {
		t.Fatalf("batch: %v, the call after the loss: %v; want both to fail", err, next)
	}
	if _, err := db.GetBackend(ctx, "next-call"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the call after the loss: %v, want nothing written outside the transaction", err)
	}
}
