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
	// pending, in a whole batch, holds writes whose result no one reads
	// (a backend, an agent's tags), sent with the next statement in one
	// round trip (flush); an error of theirs is that statement's.
	pending pgx.Batch
}

// batchOf is the batch ctx carries for pool, or nil.
func batchOf(ctx context.Context, pool *pgxpool.Pool) *batch {
	b, _ := ctx.Value(batchKey{pool}).(*batch)
	return b
}

// batchTx is the batch transaction ctx carries for pool, or nil.
func batchTx(ctx context.Context, pool *pgxpool.Pool) pgx.Tx {
	if b := batchOf(ctx, pool); b != nil {
		return b.tx
	}
	return nil
}

// batchWhole reports whether ctx's batch on pool runs calls without savepoints.
func batchWhole(ctx context.Context, pool *pgxpool.Pool) bool {
	b := batchOf(ctx, pool)
	return b != nil && b.whole
}

// later queues a write of a whole batch whose result is not read; false
// outside one (the caller runs it now).
func (b *batch) later(sql string, args ...any) bool {
	if b == nil || !b.whole {
		return false
	}
	b.pending.Queue(sql, args...)
	return true
}

// flush sends the queued writes, if any.
func (b *batch) flush(ctx context.Context) error {
	if b == nil || b.pending.Len() == 0 {
		return nil
	}
	pending := b.pending
	b.pending = pgx.Batch{}
	return b.tx.SendBatch(ctx, &pending).Close()
}

// queryRow runs a query of a whole batch after its queued writes, in the
// same round trip.
func (b *batch) queryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if b.pending.Len() == 0 {
		return b.tx.QueryRow(ctx, sql, args...)
	}
	pending := b.pending
	b.pending = pgx.Batch{}
	n := pending.Len()
	pending.Queue(sql, args...)
	br := b.tx.SendBatch(ctx, &pending)
	for range n {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return errRow{err}
		}
	}
	return closingRow{row: br.QueryRow(), br: br}
}

// errRow is a row that failed before it was read.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// closingRow closes its batch once scanned.
type closingRow struct {
	row pgx.Row
	br  pgx.BatchResults
}

func (r closingRow) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	if cerr := r.br.Close(); err == nil {
		err = cerr
	}
	return err
}

// wholeTx is a whole batch's transaction as UpsertRecord's function sees
// it: Exec is queued (its result unread), queries go after the queue.
type wholeTx struct {
	pgx.Tx
	b *batch
}

func (t wholeTx) Exec(_ context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	t.b.later(sql, args...)
	return pgconn.CommandTag{}, nil
}

func (t wholeTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return t.b.queryRow(ctx, sql, args...)
}

func (t wholeTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if err := t.b.flush(ctx); err != nil {
		return nil, err
	}
	return t.Tx.Query(ctx, sql, args...)
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
	b := &batch{tx: tx, whole: whole}
	if err := fn(context.WithValue(ctx, batchKey{db.q.pool}, b)); err != nil {
		return err
	}
	if err := b.flush(ctx); err != nil {
		return dbErr("batch", err)
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
