package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/agentsite/agentsite/store"
)

// execer is what the query helpers run statements through (stmts): on a
// pool or in a transaction.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (rowSet, error)
	QueryRowContext(ctx context.Context, query string, args ...any) scanner
}

// rowSet is the result of a query: *sql.Rows, whose statement ends when it
// is closed.
type rowSet interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close() error
}

// runner runs one statement as it is: a pool's statement cache
// (*stmtCache) or a transaction (txStmts).
type runner interface {
	exec(ctx context.Context, query string, args []any) (sql.Result, error)
	query(ctx context.Context, query string, args []any) (*sql.Rows, error)
}

// stmts is the one path every statement of the engine takes. It runs them
// on run, records each in the store metrics by store.StatementName and puts
// each under the store deadline, released when the statement is done (its
// rows closed). In a transaction opts has no Timeout: runTx bounds the
// transaction as a whole.
type stmts struct {
	run  runner
	opts store.Options
	// note, if set, hears how each statement ended and whether it changed
	// a row (DB.noteWrite, on the write pool's statements).
	note func(err error, changed bool)
}

var _ execer = stmts{}

// ExecContext implements execer.
func (s stmts) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	ctx, c := s.begin(ctx, query)
	res, err := s.run.exec(ctx, query, args)
	err = c.finish(err)
	if s.note != nil {
		s.note(err, changedRows(res, err))
	}
	return res, err
}

// changedRows reports whether a statement that ended with res and err
// changed a row.
func changedRows(res sql.Result, err error) bool {
	if err != nil || res == nil {
		return false
	}
	n, err := res.RowsAffected()
	return err == nil && n > 0
}

// QueryContext implements execer.
func (s stmts) QueryContext(ctx context.Context, query string, args ...any) (rowSet, error) {
	ctx, c := s.begin(ctx, query)
	c.note = s.note
	rows, err := s.run.query(ctx, query, args)
	if err != nil {
		return nil, c.finish(err)
	}
	return &stmtRows{Rows: rows, call: c}, nil
}

// QueryRowContext implements execer, with *sql.Row's semantics: the
// query's error or its first row (sql.ErrNoRows if none) comes on Scan.
func (s stmts) QueryRowContext(ctx context.Context, query string, args ...any) scanner {
	rows, err := s.QueryContext(ctx, query, args...)
	return firstRow{rows: rows, err: err}
}

func (s stmts) begin(ctx context.Context, query string) (context.Context, *stmtCall) {
	ctx, end := s.opts.Bound(ctx)
	return ctx, &stmtCall{op: store.StatementName(query), start: time.Now(), end: end, metrics: s.opts.Metrics}
}

// stmtCall is one statement in progress.
type stmtCall struct {
	op      string
	start   time.Time
	end     func(error) error // from store.Options.Bound
	metrics *store.Metrics
	note    func(err error, changed bool) // stmts.note, for a query (INSERT ... RETURNING)
}

// finish releases the statement's deadline, records it and returns err
// (store.ErrUnavailable if the store deadline cut it).
func (c *stmtCall) finish(err error) error {
	err = c.end(err)
	c.metrics.Observe(c.op, time.Since(c.start), dbErr(c.op, err))
	if c.note != nil {
		c.note(err, err == nil)
	}
	return err
}

// stmtRows ends its statement when closed. Err ends it too: call it after
// the loop, as database/sql's own users do.
type stmtRows struct {
	*sql.Rows
	call *stmtCall
	done bool
	err  error
}

// Close implements rowSet.
func (r *stmtRows) Close() error { return r.finish() }

// Err implements rowSet.
func (r *stmtRows) Err() error { return r.finish() }

func (r *stmtRows) finish() error {
	if !r.done {
		r.done = true
		err := r.Rows.Err()
		if cerr := r.Rows.Close(); err == nil {
			err = cerr
		}
		r.err = r.call.finish(err)
	}
	return r.err
}

// firstRow is QueryRowContext's result.
type firstRow struct {
	rows rowSet
	err  error
}

// Scan implements scanner.
func (r firstRow) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	defer r.rows.Close()
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return sql.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	return r.rows.Close()
}
