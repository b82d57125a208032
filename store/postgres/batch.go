package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentsite/agentsite/store"
)

var _ store.Batcher = (*DB)(nil)

// batchKey carries a batch's transaction on pool in a context.
type batchKey struct{ pool *pgxpool.Pool }

// batch is what a batch's context carries: its transaction, and whether
// calls run without their own savepoint (InBatchWhole).
type batch struct {
	tx    pgx.Tx
	whole bool
}

// batchTx is the batch transaction ctx carries for pool, or nil.
func batchTx(ctx context.Context, pool *pgxpool.Pool) pgx.Tx {
	if b, ok := ctx.Value(batchKey{pool}).(batch); ok {
		return b.tx
	}
	return nil
}

// batchWhole reports whether ctx's batch on pool runs calls without savepoints.
func batchWhole(ctx context.Context, pool *pgxpool.Pool) bool {
	b, _ := ctx.Value(batchKey{pool}).(batch)
	return b.whole
}

// InBatch implements store.Batcher: one transaction on one pooled
// connection, one commit; every store call inside runs in a savepoint
// (pgx's nested transaction), so a failing one is undone alone and does
// not abort the batch. A batch inside a batch joins it.
func (db *DB) InBatch(ctx context.Context, fn func(ctx context.Context) error) error {
	return db.inBatch(ctx, false, fn)
}

// InBatchWhole implements store.Batcher: InBatch without the savepoints,
// so one round trip per statement.
func (db *DB) InBatchWhole(ctx context.Context, fn func(ctx context.Context) error) error {
	return db.inBatch(ctx, true, fn)
}

func (db *DB) inBatch(ctx context.Context, whole bool, fn func(ctx context.Context) error) (err error) {
	if batchTx(ctx, db.q.pool) != nil {
		return fn(ctx)
	}
	tx, err := db.q.pool.Begin(ctx)
	if err != nil {
		return dbErr("begin batch", err)
	}
	defer func() {
		if p := recover(); p != nil {
			rollback(ctx, tx, db.logger)
			panic(p)
		}
		if err != nil {
			rollback(ctx, tx, db.logger)
		}
	}()
	if err := fn(context.WithValue(ctx, batchKey{db.q.pool}, batch{tx: tx, whole: whole})); err != nil {
		return err
	}
	return dbErr("commit batch", tx.Commit(ctx))
}

// Savepoints of a batch, named for the statement metrics.
const (
	savepointSQL         = "-- name: savepoint\nSAVEPOINT store_call"
	releaseSavepointSQL  = "-- name: release_savepoint\nRELEASE SAVEPOINT store_call"
	rollbackSavepointSQL = "-- name: rollback_savepoint\nROLLBACK TO SAVEPOINT store_call"
)

// inSavepoint runs fn, one store call of a batch, in its own savepoint of
// tx: undone alone if it fails, so the batch goes on.
func inSavepoint(ctx context.Context, tx pgx.Tx, whole bool, fn func() error) error {
	if whole {
		return fn()
	}
	if _, err := tx.Exec(ctx, savepointSQL); err != nil {
		return dbErr("savepoint", err)
	}
	if err := fn(); err != nil {
		if _, rerr := tx.Exec(ctx, rollbackSavepointSQL); rerr == nil {
			_, _ = tx.Exec(ctx, releaseSavepointSQL)
		}
		return err
	}
	_, err := tx.Exec(ctx, releaseSavepointSQL)
	return dbErr("release savepoint", err)
}

// batchExec runs one statement of a batch in its own savepoint.
func batchExec(ctx context.Context, tx pgx.Tx, whole bool, sql string, args ...any) (tag pgconn.CommandTag, err error) {
	err = inSavepoint(ctx, tx, whole, func() error {
		var e error
		tag, e = tx.Exec(ctx, sql, args...)
		return e
	})
	return tag, err
}
