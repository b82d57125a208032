package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

var (
	_ store.Batcher = (*DB)(nil)
	_ store.Tx      = batchTx{}
	_ writer        = (*batch)(nil)
)

// writer is where a store call's writes go: the write pool (pooled, the
// DB's own methods) or a batch's transaction (*batch, the methods of its
// store.Tx). The call is written once for both; nothing looks in the
// context for a transaction.
type writer interface {
	// execer runs one statement.
	execer
	// atomic runs fn, statements that stand or fall together: in a write
	// transaction of its own on the pool (warm lists the queries to
	// prepare before it takes the connection), in a savepoint of a batch
	// (none in a whole batch, which the caller rolls back).
	atomic(ctx context.Context, fn func(ctx context.Context, tx execer) error, warm ...string) error
}

// pooled is the DB as a writer: the write pool.
type pooled struct{ db *DB }

var _ writer = pooled{}

// ExecContext implements execer.
func (p pooled) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return p.db.w.ExecContext(ctx, query, args...)
}

// QueryContext implements execer.
func (p pooled) QueryContext(ctx context.Context, query string, args ...any) (rowSet, error) {
	return p.db.w.QueryContext(ctx, query, args...)
}

// QueryRowContext implements execer.
func (p pooled) QueryRowContext(ctx context.Context, query string, args ...any) scanner {
	return p.db.w.QueryRowContext(ctx, query, args...)
}

// atomic implements writer: a write transaction of its own.
func (p pooled) atomic(ctx context.Context, fn func(ctx context.Context, tx execer) error, warm ...string) error {
	return p.db.inTx(ctx, fn, warm...)
}

// batch is a batch's write transaction as a writer. Its statements are
// the write pool's (prepared ones reused, each under the store deadline,
// recorded, heard by noteWrite), on the transaction's connection.
type batch struct {
	db    *DB
	tx    *sql.Tx
	whole bool // InBatchWhole: no savepoints
	// lost is why the batch's transaction can no longer be trusted (a
	// savepoint that could not be rolled back); set, it fails every call
	// and the commit.
	lost  error
	stmts stmts
	// backends are the backends PutBackend was given in a whole batch,
	// not yet written: they go in one statement (putBackendsSQL) before
	// the batch's next statement or its commit (flushBackends). A
	// statement each was an eighth of an import's CPU.
	backends []pendingBackend
}

// pendingBackend is a row of agent_backends, as putBackendsSQL reads it:
// [agent_id, config, updated_at].
type pendingBackend [3]any

func newBatch(db *DB, tx *sql.Tx, whole bool) *batch {
	return &batch{db: db, tx: tx, whole: whole,
		stmts: stmts{run: txStmts{tx: tx, cache: db.wc}, opts: db.opts, note: db.noteWrite}}
}

// ExecContext implements execer.
func (b *batch) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if b.lost != nil {
		return nil, b.lost
	}
	if err := b.flushBackends(ctx); err != nil {
		return nil, err
	}
	return b.stmts.ExecContext(ctx, query, args...)
}

// QueryContext implements execer.
func (b *batch) QueryContext(ctx context.Context, query string, args ...any) (rowSet, error) {
	if b.lost != nil {
		return nil, b.lost
	}
	if err := b.flushBackends(ctx); err != nil {
		return nil, err
	}
	return b.stmts.QueryContext(ctx, query, args...)
}

// QueryRowContext implements execer.
func (b *batch) QueryRowContext(ctx context.Context, query string, args ...any) scanner {
	rows, err := b.QueryContext(ctx, query, args...)
	return firstRow{rows: rows, err: err}
}

// atomic implements writer: fn under the store deadline as one call, in a
// savepoint of its own unless the batch is whole. Its queries were warmed
// when the batch began (InBatch): the connection is the batch's.
func (b *batch) atomic(ctx context.Context, fn func(ctx context.Context, tx execer) error, _ ...string) error {
	if err := b.flushBackends(ctx); err != nil {
		return err
	}
	ctx, end := b.db.opts.Bound(ctx)
	return end(b.inSavepoint(ctx, fn))
}

// putBackendsSQL is putBackendSQL for many rows, given as a JSON array of
// [agent_id, config, updated_at]; a later row of the same agent wins.
const putBackendsSQL = `-- name: put_backends
INSERT INTO agent_backends (agent_id, config, updated_at)
SELECT value ->> 0, value ->> 1, value ->> 2 FROM json_each(?) WHERE true
ON CONFLICT (agent_id) DO UPDATE SET config = excluded.config, updated_at = excluded.updated_at`

// putBackend is PutBackend in the batch: kept for flushBackends in a
// whole batch (whose caller rolls everything back on any error, so an
// error may come with a later statement), written at once otherwise.
func (b *batch) putBackend(ctx context.Context, agentID string, be agent.Backend) error {
	if !b.whole {
		return putBackend(ctx, b, agentID, be)
	}
	config, err := json.Marshal(be)
	if err != nil {
		return fmt.Errorf("sqlite: put backend of agent %s: encode: %w", agentID, err)
	}
	b.backends = append(b.backends, pendingBackend{agentID, string(config), time.Now().UnixNano()})
	return nil
}

// flushBackends writes the backends putBackend kept, in one statement.
func (b *batch) flushBackends(ctx context.Context) error {
	if len(b.backends) == 0 {
		return nil
	}
	rows, err := json.Marshal(b.backends)
	if err != nil {
		return fmt.Errorf("sqlite: put backends: encode: %w", err)
	}
	n := len(b.backends)
	b.backends = b.backends[:0]
	_, err = b.stmts.ExecContext(ctx, putBackendsSQL, string(rows))
	return dbErr(fmt.Sprintf("put backends of %d agents", n), err)
}

// savepointTimeout bounds the statements that close a savepoint. They
// run on a context of their own: the call's may be what ended it (the
// store deadline, under load), and a savepoint left open would keep the
// failed call's writes in the batch.
const savepointTimeout = 5 * time.Second

// inSavepoint runs one store call inside the batch transaction, undone
// alone if it fails. If it cannot be undone (SQLite rolled the whole
// transaction back when a statement was interrupted), the batch is lost:
// every later call and the commit say so, rather than writing outside
// the transaction.
func (b *batch) inSavepoint(ctx context.Context, fn func(ctx context.Context, tx execer) error) error {
	run := stmts{run: txStmts{tx: b.tx, cache: b.db.wc}, opts: store.Options{Metrics: b.db.opts.Metrics}}
	if b.lost != nil {
		return b.lost
	}
	if b.whole {
		return fn(ctx, run)
	}
	if _, err := b.tx.ExecContext(ctx, "SAVEPOINT store_call"); err != nil {
		return dbErr("savepoint", err)
	}
	err := fn(ctx, run)
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), savepointTimeout)
	defer cancel()
	if err != nil {
		if _, rerr := b.tx.ExecContext(cctx, "ROLLBACK TO store_call"); rerr != nil {
			b.db.logger.Warn("sqlite: rollback to savepoint failed; the batch is lost", "err", rerr)
			b.lost = fmt.Errorf("sqlite: a store call of the batch failed (%w) and could not be undone: %w", err, dbErr("rollback to savepoint", rerr))
			return b.lost
		}
	}
	if _, rerr := b.tx.ExecContext(cctx, "RELEASE store_call"); rerr != nil {
		b.lost = dbErr("release savepoint", rerr)
		return b.lost
	}
	return err
}

// batchTx is the store.Tx of a batch: its writes in the batch's
// transaction, its reads on the reader pool (they see what was committed,
// not the batch's own writes).
type batchTx struct{ b *batch }

// GetAgent implements store.Tx.
func (t batchTx) GetAgent(ctx context.Context, id string) (store.Listing, error) {
	return t.b.db.GetAgent(ctx, id)
}

// GetAgents implements store.Tx.
func (t batchTx) GetAgents(ctx context.Context, ids []string) ([]store.Listing, error) {
	return t.b.db.GetAgents(ctx, ids)
}

// UpsertRecord implements store.Tx.
func (t batchTx) UpsertRecord(ctx context.Context, l store.Listing) error {
	return t.b.db.upsertRecord(ctx, t.b, l)
}

// GetBackend implements store.Tx.
func (t batchTx) GetBackend(ctx context.Context, agentID string) (agent.Backend, error) {
	return t.b.db.GetBackend(ctx, agentID)
}

// PutBackend implements store.Tx. In InBatchWhole the backend is
// written with the batch's next statement or at its commit, with the
// others put meanwhile, in one statement; an error is then that one's.
func (t batchTx) PutBackend(ctx context.Context, agentID string, b agent.Backend) error {
	return t.b.putBackend(ctx, agentID, b)
}

// DeleteBackend implements store.Tx.
func (t batchTx) DeleteBackend(ctx context.Context, agentID string) error {
	return deleteBackend(ctx, t.b, agentID)
}

// InBatch implements store.Batcher: one write transaction (the write
// connection is held until it ends), a savepoint per call of fn's Tx.
func (db *DB) InBatch(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	return db.inBatch(ctx, false, fn)
}

// InBatchWhole implements store.Batcher: InBatch without the savepoints.
func (db *DB) InBatchWhole(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	return db.inBatch(ctx, true, fn)
}

func (db *DB) inBatch(ctx context.Context, whole bool, fn func(ctx context.Context, tx store.Tx) error) (err error) {
	if err := db.space.readOnly; err != nil {
		return err
	}
	defer func() { db.noteWrite(err, err == nil) }()
	// Prepared on the pool before the transaction takes its one
	// connection: inside, statements can only be reused, not prepared.
	db.wc.warm(ctx, upsertAgentSQL, deleteTagsSQL, insertTagsSQL, putBackendSQL, putBackendsSQL,
		deletePageTagsSQL, insertPageTagsSQL)
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
	b := newBatch(db, tx, whole)
	if err := fn(ctx, batchTx{b}); err != nil {
		return err
	}
	if err := b.flushBackends(ctx); err != nil {
		return err
	}
	if b.lost != nil {
		return b.lost
	}
	return dbErr("commit batch", tx.Commit())
}
