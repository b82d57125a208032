package sqlite

import (
	"context"
	"database/sql"

	"github.com/agentsite/agentsite/store"
)

var _ store.Batcher = (*DB)(nil)

// batchKey carries a batch's transaction on pool in a context.
type batchKey struct{ pool *sql.DB }

// batch is what a batch's context carries: its transaction, and whether
// calls run without their own savepoint (InBatchWhole).
type batch struct {
	tx    *sql.Tx
	whole bool
}

// batchTx is the batch transaction ctx carries for pool, or nil.
func batchTx(ctx context.Context, pool *sql.DB) *sql.Tx {
	if b, ok := ctx.Value(batchKey{pool}).(batch); ok {
		return b.tx
	}
	return nil
}

// batchWhole reports whether ctx's batch on pool runs calls without savepoints.
func batchWhole(ctx context.Context, pool *sql.DB) bool {
	b, _ := ctx.Value(batchKey{pool}).(batch)
	return b.whole
}

// InBatch implements store.Batcher: one write transaction (the write
// connection is held until it ends), a savepoint per store call; a batch
// inside a batch joins it.
func (db *DB) InBatch(ctx context.Context, fn func(ctx context.Context) error) error {
	return db.inBatch(ctx, false, fn)
}

// InBatchWhole implements store.Batcher: InBatch without the savepoints.
func (db *DB) InBatchWhole(ctx context.Context, fn func(ctx context.Context) error) error {
	return db.inBatch(ctx, true, fn)
}

func (db *DB) inBatch(ctx context.Context, whole bool, fn func(ctx context.Context) error) (err error) {
	if batchTx(ctx, db.write) != nil {
		return fn(ctx)
	}
	if err := db.space.readOnly; err != nil {
		return err
	}
	defer func() { db.noteWrite(err, err == nil) }()
	// Prepared on the pool before the transaction takes its one
	// connection: inside, statements can only be reused, not prepared.
	db.wc.warm(ctx, upsertAgentSQL, deleteTagsSQL, insertTagsSQL, putBackendSQL)
	tx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return dbErr("begin batch", err)
	}
	defer func() {
		if p := recover(); p != nil {
			db.rollback(tx)
			panic(p)
		}
		if err != nil {
			db.rollback(tx)
		}
	}()
	if err := fn(context.WithValue(ctx, batchKey{db.write}, batch{tx: tx, whole: whole})); err != nil {
		return err
	}
	return dbErr("commit batch", tx.Commit())
}

// inSavepoint runs one store call inside the batch transaction tx, undone
// alone if it fails.
func (db *DB) inSavepoint(ctx context.Context, tx *sql.Tx, cache *stmtCache, fn func(ctx context.Context, tx execer) error) error {
	if batchWhole(ctx, db.write) {
		return fn(ctx, stmts{run: txStmts{tx: tx, cache: cache}, opts: store.Options{Metrics: db.opts.Metrics}})
	}
	if _, err := tx.ExecContext(ctx, "SAVEPOINT store_call"); err != nil {
		return dbErr("savepoint", err)
	}
	if err := fn(ctx, stmts{run: txStmts{tx: tx, cache: cache}, opts: store.Options{Metrics: db.opts.Metrics}}); err != nil {
		if _, rerr := tx.ExecContext(ctx, "ROLLBACK TO store_call"); rerr != nil {
			db.logger.Warn("sqlite: rollback to savepoint failed", "err", rerr)
		}
		_, _ = tx.ExecContext(ctx, "RELEASE store_call")
		return err
	}
	_, err := tx.ExecContext(ctx, "RELEASE store_call")
	return dbErr("release savepoint", err)
}
