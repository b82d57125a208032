package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

var (
	_ store.Batcher = (*DB)(nil)
	_ store.Tx      = batchTx{}
	_ executor      = (*batch)(nil)
)

// batch is a batch's transaction as an executor: every statement of a
// store call made through its Tx runs in it, under the store deadline one
// by one (as on the pool); in InBatch each call in its own savepoint.
type batch struct {
	tx    pgx.Tx
	opts  store.Options
	whole bool // InBatchWhole: no savepoints
	// pending, in a whole batch, holds writes whose result no one reads
	// (a backend, an agent's tags), sent with the next statement in one
	// round trip (flush); an error of theirs is that statement's.
	pending pgx.Batch
}

// Exec implements querier: after the queued writes, in a savepoint of its
// own unless the batch is whole.
func (b *batch) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	ctx, end := b.opts.Bound(ctx)
	if err := b.flush(ctx); err != nil {
		return pgconn.CommandTag{}, end(err)
	}
	tag, err := batchExec(ctx, b.tx, b.whole, sql, args...)
	return tag, end(err)
}

// Query implements querier, after the queued writes.
func (b *batch) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	ctx, end := b.opts.Bound(ctx)
	if err := b.flush(ctx); err != nil {
		return nil, end(err)
	}
	rows, err := b.tx.Query(ctx, sql, args...)
	if err != nil {
		return rows, end(err)
	}
	return &boundedRows{Rows: rows, end: end}, nil
}

// QueryRow implements querier; in a whole batch, in the same round trip
// as the queued writes.
func (b *batch) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	ctx, end := b.opts.Bound(ctx)
	if b.whole {
		return boundedRow{row: b.queryRow(ctx, sql, args...), end: end}
	}
	return boundedRow{row: b.tx.QueryRow(ctx, sql, args...), end: end}
}

// execLater implements executor: queued in a whole batch (sent with the
// next statement), else run now.
func (b *batch) execLater(ctx context.Context, sql string, args ...any) error {
	if b.whole {
		b.pending.Queue(sql, args...)
		return nil
	}
	_, err := b.Exec(ctx, sql, args...)
	return err
}

// atomic implements executor: fn in a savepoint of the batch, undone alone
// if it fails; in a whole batch without one (its Exec queued, its queries
// after the queue: wholeTx).
func (b *batch) atomic(ctx context.Context, fn func(ctx context.Context, q querier) error) error {
	ctx, end := b.opts.Bound(ctx)
	if b.whole {
		return end(fn(ctx, wholeTx{b}))
	}
	return end(inSavepoint(ctx, b.tx, false, func() error { return fn(ctx, b.tx) }))
}

// flush sends the queued writes, if any.
func (b *batch) flush(ctx context.Context) error {
	if b.pending.Len() == 0 {
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

// wholeTx is a whole batch's transaction as an atomic call's function
// sees it: Exec is queued (its result unread), queries go after the queue.
type wholeTx struct{ b *batch }

func (t wholeTx) Exec(_ context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	t.b.pending.Queue(sql, args...)
	return pgconn.CommandTag{}, nil
}

func (t wholeTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return t.b.queryRow(ctx, sql, args...)
}

func (t wholeTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if err := t.b.flush(ctx); err != nil {
		return nil, err
	}
	return t.b.tx.Query(ctx, sql, args...)
}

// batchTx is the store.Tx of a batch: the engine's calls, on the batch's
// transaction.
type batchTx struct{ b *batch }

// GetAgent implements store.Tx.
func (t batchTx) GetAgent(ctx context.Context, id string) (store.Listing, error) {
	return getAgent(ctx, t.b, id)
}

// GetAgents implements store.Tx.
func (t batchTx) GetAgents(ctx context.Context, ids []string) ([]store.Listing, error) {
	return getAgents(ctx, t.b, ids)
}

// UpsertRecord implements store.Tx.
func (t batchTx) UpsertRecord(ctx context.Context, l store.Listing) error {
	return upsertRecord(ctx, t.b, l)
}

// GetBackend implements store.Tx.
func (t batchTx) GetBackend(ctx context.Context, agentID string) (agent.Backend, error) {
	return getBackend(ctx, t.b, agentID)
}

// PutBackend implements store.Tx.
func (t batchTx) PutBackend(ctx context.Context, agentID string, b agent.Backend) error {
	return putBackend(ctx, t.b, agentID, b)
}

// DeleteBackend implements store.Tx.
func (t batchTx) DeleteBackend(ctx context.Context, agentID string) error {
	return deleteBackend(ctx, t.b, agentID)
}

// InBatch implements store.Batcher: one transaction on one pooled
// connection, one commit; every call of fn's Tx runs in a savepoint
// (pgx's nested transaction), so a failing one is undone alone and does
// not abort the batch.
func (db *DB) InBatch(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	return db.inBatch(ctx, false, fn)
}

// InBatchWhole implements store.Batcher: InBatch without the savepoints,
// so one round trip per statement, or fewer (a write whose result is not
// read goes with the next statement).
func (db *DB) InBatchWhole(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	return db.inBatch(ctx, true, fn)
}

func (db *DB) inBatch(ctx context.Context, whole bool, fn func(ctx context.Context, tx store.Tx) error) (err error) {
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
	b := &batch{tx: tx, opts: db.opts, whole: whole}
	if err := fn(ctx, batchTx{b}); err != nil {
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
// tx: undone alone if it fails, so the batch goes on. The savepoint is
// closed on a context of its own (rollbackTimeout): the call's may be
// what ended it (the store deadline, under load), and a savepoint not
// rolled back would leave the transaction aborted, or the failed call's
// writes in it.
func inSavepoint(ctx context.Context, tx pgx.Tx, whole bool, fn func() error) error {
	if whole {
		return fn()
	}
	if _, err := tx.Exec(ctx, savepointSQL); err != nil {
		return dbErr("savepoint", err)
	}
	err := fn()
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
	defer cancel()
	if err != nil {
		if _, rerr := tx.Exec(cctx, rollbackSavepointSQL); rerr == nil {
			_, _ = tx.Exec(cctx, releaseSavepointSQL)
		}
		return err
	}
	_, err = tx.Exec(cctx, releaseSavepointSQL)
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
