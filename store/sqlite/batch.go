package sqlite

import (
	"context"
	"database/sql"

	"github.com/agentsite/agentsite/store"
)

var _ store.Batcher = (*DB)(nil)

// batchKey carries a batch's transaction on pool in a context.
type batchKey struct{ pool *sql.DB }

// batchTx is the batch transaction ctx carries for pool, or nil.
func batchTx(ctx context.Context, pool *sql.DB) *sql.Tx {
	tx, _ := ctx.Value(batchKey{pool}).(*sql.Tx)
	return tx
}

// InBatch implements store.Batcher: one write transaction (the write
// connection is held until it ends); a batch inside a batch joins it.
func (db *DB) InBatch(ctx context.Context, fn func(ctx context.Context) error) (err error) {
	if batchTx(ctx, db.write) != nil {
		return fn(ctx)
	}
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
	if err := fn(context.WithValue(ctx, batchKey{db.write}, tx)); err != nil {
		return err
	}
	return dbErr("commit batch", tx.Commit())
}

// inSavepoint runs one store call inside the batch transaction tx, undone
// alone if it fails.
func (db *DB) inSavepoint(ctx context.Context, tx *sql.Tx, cache *stmtCache, fn func(ctx context.Context, tx execer) error) error {
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
