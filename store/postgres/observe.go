package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentsite/agentsite/store"
)

// bounded is the pool under the store deadline (store.Options.Bound): each
// statement gets its own, taken before the pool is asked for a connection
// (a frozen server holds the acquire too) and released once the statement
// is done: its rows closed, its row scanned.
type bounded struct {
	pool *pgxpool.Pool
	opts store.Options
}

var _ querier = bounded{}

// Exec implements querier.
func (b bounded) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	ctx, end := b.opts.Bound(ctx)
	tag, err := b.pool.Exec(ctx, sql, args...)
	return tag, end(err)
}

// Query implements querier.
func (b bounded) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	ctx, end := b.opts.Bound(ctx)
	rows, err := b.pool.Query(ctx, sql, args...)
	if err != nil {
		return rows, end(err)
	}
	return &boundedRows{Rows: rows, end: end}, nil
}

// QueryRow implements querier.
func (b bounded) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	ctx, end := b.opts.Bound(ctx)
	return boundedRow{row: b.pool.QueryRow(ctx, sql, args...), end: end}
}

// boundedRows ends its statement's deadline when the rows are closed; Err
// reports the store deadline as store.ErrUnavailable.
type boundedRows struct {
	pgx.Rows
	end  func(error) error
	done bool
	err  error
}

// Close implements pgx.Rows.
func (r *boundedRows) Close() { r.finish() }

// Err implements pgx.Rows. pgx allows it only once the rows are closed or
// exhausted, so it may end the statement.
func (r *boundedRows) Err() error { return r.finish() }

func (r *boundedRows) finish() error {
	if !r.done {
		r.done = true
		r.Rows.Close()
		r.err = r.end(r.Rows.Err())
	}
	return r.err
}

// boundedRow ends its statement's deadline once scanned.
type boundedRow struct {
	row pgx.Row
	end func(error) error
}

// Scan implements pgx.Row.
func (r boundedRow) Scan(dest ...any) error { return r.end(r.row.Scan(dest...)) }

// tracer records every statement pgx sends (BEGIN and COMMIT included) in
// the store metrics, by store.StatementName, and each wait for a pooled
// connection as "acquire". It is the pool's pgx.QueryTracer and
// pgxpool.AcquireTracer.
type tracer struct{ metrics *store.Metrics }

var (
	_ pgx.QueryTracer       = tracer{}
	_ pgxpool.AcquireTracer = tracer{}
)

// traceKey holds a traceStart in the context pgx hands from the start of a
// statement (or an acquire) to its end.
type traceKey struct{}

type traceStart struct {
	op string
	at time.Time
}

// TraceQueryStart implements pgx.QueryTracer.
func (t tracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	return context.WithValue(ctx, traceKey{}, traceStart{op: store.StatementName(d.SQL), at: time.Now()})
}

// TraceQueryEnd implements pgx.QueryTracer.
func (t tracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryEndData) {
	t.end(ctx, d.Err)
}

// TraceAcquireStart implements pgxpool.AcquireTracer.
func (t tracer) TraceAcquireStart(ctx context.Context, _ *pgxpool.Pool, _ pgxpool.TraceAcquireStartData) context.Context {
	return context.WithValue(ctx, traceKey{}, traceStart{op: "acquire", at: time.Now()})
}

// TraceAcquireEnd implements pgxpool.AcquireTracer.
func (t tracer) TraceAcquireEnd(ctx context.Context, _ *pgxpool.Pool, d pgxpool.TraceAcquireEndData) {
	t.end(ctx, d.Err)
}

// end observes the statement started in ctx; dbErr maps err so that a
// missing row or parent row counts as an answer, not a failure.
func (t tracer) end(ctx context.Context, err error) {
	if s, ok := ctx.Value(traceKey{}).(traceStart); ok {
		t.metrics.Observe(s.op, time.Since(s.at), dbErr(s.op, err))
	}
}
