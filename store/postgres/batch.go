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

// batchTx is the batch transaction ctx carries for pool, or nil.
func batchTx(ctx context.Context, pool *pgxpool.Pool) pgx.Tx {
	tx, _ := ctx.Value(batchKey{pool}).(pgx.Tx)
	return tx
}

// InBatch implements store.Batcher: one transaction on one pooled
// connection, one commit; every store call inside runs in a savepoint
// (pgx's nested transaction), so a failing one is undone alone and does
// not abort the batch. A batch inside a batch joins it.
func (db *DB) InBatch(ctx context.Context, fn func(ctx context.Context) error) (err error) {
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
	if err := fn(context.WithValue(ctx, batchKey{db.q.pool}, tx)); err != nil {
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
func inSavepoint(ctx context.Context, tx pgx.Tx, fn func() error) error {
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
func batchExec(ctx context.Context, tx pgx.Tx, sql string, args ...any) (tag pgconn.CommandTag, err error) {
	err = inSavepoint(ctx, tx, func() error {
		var e error
		tag, e = tx.Exec(ctx, sql, args...)
		return e
	})
	return tag, err
}
