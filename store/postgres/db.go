// Package postgres is the Postgres engine of store.Store, on pgx/v5 and
// pgxpool. Open connects, refuses a schema newer than this binary, applies
// the embedded migrations (migrations/postgres) and returns a DB that is safe
// for concurrent use.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentsite/agentsite/store"
)

// Pool and session defaults, used when the database URL does not set them
// (?pool_max_conns=16&statement_timeout=30s&connect_timeout=10 ...).
const (
	// defaultMaxConns: every store call is a short query; 16 connections
	// serve many more concurrent HTTP requests than the paper's 20 clients.
	defaultMaxConns = 16
	defaultMinConns = 2
	// defaultStatementTimeout bounds any statement the server runs for us,
	// even if a caller forgot a deadline on its context.
	defaultStatementTimeout = "30s"
	// defaultIdleInTxTimeout frees locks held by a transaction whose client
	// went away mid-way.
	defaultIdleInTxTimeout = 60 * time.Second
	// defaultConnectTimeout bounds a new connection (the pool dials in the
	// background, past the deadline of the call that asked for it).
	defaultConnectTimeout = 5 * time.Second
	// defaultHealthCheckPeriod: how often idle connections are checked and
	// the pool refilled to its minimum, so it heals soon after an outage.
	defaultHealthCheckPeriod = 15 * time.Second
	// rollbackTimeout bounds the rollback of a failed transaction, which runs
	// on a fresh context because the caller's may be what failed.
	rollbackTimeout = 5 * time.Second
)

// DB is the Postgres store.Store.
type DB struct {
	// q is the pool under the store deadline: every statement outside a
	// transaction goes through it (InTransaction bounds the others). The
	// pool itself is only reached through q, so that no statement can
	// forget the deadline by accident.
	q      bounded
	opts   store.Options
	logger *slog.Logger
	// size is what searches know of the catalogue's size (searchPlan).
	size catalogueSize
	// conv writes conversations and messages, many turns' in one
	// transaction (groupcommit.go).
	conv *store.GroupWriter[convOp]
}

var _ store.Store = (*DB)(nil)

// Open connects to url, migrates the schema and returns the store, with no
// store deadline and no metrics (OpenWith sets them). It fails with an
// error wrapping store.ErrSchemaTooNew if the database was migrated by a
// newer binary, and with a clear error if a migration was left dirty.
func Open(ctx context.Context, url string, logger *slog.Logger) (*DB, error) {
	return OpenWith(ctx, url, logger, store.Options{})
}

// OpenWith is Open with opts: every call of the store gets opts.Timeout as
// its deadline (see bounded and InTransaction), and every statement is
// recorded in opts.Metrics by a pgx QueryTracer (tracer).
func OpenWith(ctx context.Context, url string, logger *slog.Logger, opts store.Options) (*DB, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// The parse error quotes the URL, password redacted only on a best
		// effort basis: keep just the reason.
		reason := "malformed"
		var pe *pgconn.ParseConfigError
		if errors.As(err, &pe) && pe.Unwrap() != nil {
			reason = pe.Unwrap().Error()
		}
		return nil, fmt.Errorf("postgres: invalid database URL (%s); want postgres://user:pass@host:port/db?sslmode=...", reason)
	}
	if !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = defaultMaxConns
	}
	if !strings.Contains(url, "pool_min_conns") {
		cfg.MinConns = defaultMinConns
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = defaultConnectTimeout
	}
	if !strings.Contains(url, "pool_health_check_period") {
		cfg.HealthCheckPeriod = defaultHealthCheckPeriod
	}
	if cfg.ConnConfig.RuntimeParams == nil {
		cfg.ConnConfig.RuntimeParams = map[string]string{}
	}
	rp := cfg.ConnConfig.RuntimeParams
	// The migration connection gets the caller's settings but no statement
	// timeout: building an index on a large table may take a while.
	migCfg := cfg.ConnConfig.Copy()
	setDefault(rp, "statement_timeout", defaultStatementTimeout)
	setDefault(rp, "idle_in_transaction_session_timeout", strconv.FormatInt(defaultIdleInTxTimeout.Milliseconds(), 10))
	setDefault(rp, "application_name", "agentsite")
	setDefault(migCfg.RuntimeParams, "application_name", "agentsite-migrate")
	migCfg.RuntimeParams["statement_timeout"] = "0"
	if opts.Metrics != nil {
		cfg.ConnConfig.Tracer = tracer{metrics: opts.Metrics}
	}

	if err := migrateUp(ctx, migCfg, logger); err != nil {
		return nil, err
	}

	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: create pool: %w", err)
	}
	db := &DB{q: bounded{pool: pool, opts: opts}, opts: opts, logger: logger}
	db.conv = store.NewGroupWriter(maxConvBatch, db.commitConvBatch)
	if err := db.Ping(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return db, nil
}

func setDefault(m map[string]string, k, v string) {
	if _, ok := m[k]; !ok {
		m[k] = v
	}
}

// Ping checks the database is reachable (readiness). pgx sends the ping
// past the QueryTracer, so it is recorded here.
func (db *DB) Ping(ctx context.Context) error {
	start := time.Now()
	ctx, end := db.opts.Bound(ctx)
	err := end(dbErr("ping", db.q.pool.Ping(ctx)))
	db.opts.Metrics.Observe("ping", time.Since(start), err)
	return err
}

// Close waits for the connections in use to be released and closes the pool.
func (db *DB) Close() error {
	db.conv.Close()
	db.q.pool.Close()
	return nil
}

// querier is what the query helpers need; the bounded pool (DB.q) and
// pgx.Tx both have it, so a helper runs the same inside or outside a
// transaction.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

var (
	_ querier = (*pgxpool.Pool)(nil)
	_ querier = (pgx.Tx)(nil)
)

// executor is what a store call runs its statements through: the pool
// (pooled, the DB's own methods) or a batch's transaction (*batch, the
// methods of its store.Tx). The call is written once for both; nothing
// looks in the context for a transaction.
type executor interface {
	querier
	// execLater is Exec for a write whose result is not read: a whole
	// batch sends it with its next statement, one round trip for both
	// (its error is then that statement's); elsewhere it runs now.
	execLater(ctx context.Context, sql string, args ...any) error
	// atomic runs fn, statements that stand or fall together: in a
	// transaction of its own on the pool (InTransaction), in a savepoint
	// of a batch (none in a whole batch, which the caller rolls back).
	atomic(ctx context.Context, fn func(ctx context.Context, q querier) error) error
}

// pooled is the DB as an executor: each statement on the bounded pool.
type pooled struct{ db *DB }

var _ executor = pooled{}

// Exec implements querier.
func (p pooled) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return p.db.q.Exec(ctx, sql, args...)
}

// Query implements querier.
func (p pooled) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return p.db.q.Query(ctx, sql, args...)
}

// QueryRow implements querier.
func (p pooled) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return p.db.q.QueryRow(ctx, sql, args...)
}

// execLater implements executor: on the pool, now.
func (p pooled) execLater(ctx context.Context, sql string, args ...any) error {
	_, err := p.db.q.Exec(ctx, sql, args...)
	return err
}

// atomic implements executor: a transaction of its own.
func (p pooled) atomic(ctx context.Context, fn func(ctx context.Context, q querier) error) error {
	return p.db.InTransaction(ctx, func(ctx context.Context, tx pgx.Tx) error { return fn(ctx, tx) })
}

// InTransaction runs fn in a transaction: committed if fn returns nil,
// rolled back otherwise (and on panic). The rollback runs on a fresh, short
// context so a cancelled request still releases its locks promptly.
//
// The whole transaction is one store call under the store deadline: fn
// gets the bounded context and must run its statements with it.
//
// If ctx has a deadline, the server is told to end the transaction when
// the client stays silent for longer than the time left
// (idle_in_transaction_session_timeout). A caller that gave up at its
// deadline has reported the write as failed; without that bound, a COMMIT
// held up by a stalled network could still reach the server later and
// store the write after all.
func (db *DB) InTransaction(ctx context.Context, fn func(ctx context.Context, tx pgx.Tx) error) error {
	ctx, end := db.opts.Bound(ctx)
	return end(db.inTransaction(ctx, fn))
}

func (db *DB) inTransaction(ctx context.Context, fn func(ctx context.Context, tx pgx.Tx) error) (err error) {
	tx, err := db.q.pool.BeginTx(ctx, txOptions(ctx))
	if err != nil {
		return dbErr("begin", err)
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
	if err := fn(ctx, tx); err != nil {
		return err
	}
	return dbErr("commit", tx.Commit(ctx))
}

// txOptions bounds the transaction on the server by ctx's deadline (see
// InTransaction). One round trip: BEGIN and SET LOCAL go as one simple query.
func txOptions(ctx context.Context) pgx.TxOptions {
	dl, ok := ctx.Deadline()
	if !ok || time.Until(dl) >= defaultIdleInTxTimeout {
		return pgx.TxOptions{}
	}
	ms := max(time.Until(dl).Milliseconds(), 1)
	return pgx.TxOptions{BeginQuery: fmt.Sprintf("BEGIN; SET LOCAL idle_in_transaction_session_timeout = %d", ms)}
}

func rollback(ctx context.Context, tx pgx.Tx, logger *slog.Logger) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
	defer cancel()
	if err := tx.Rollback(rctx); err != nil && !errors.Is(err, pgx.ErrTxClosed) {
		logger.Warn("postgres: rollback failed", "err", err)
	}
}

// dbErr wraps err with the operation's name and maps driver errors to the
// store's sentinels: no rows → ErrNotFound, unique violation → ErrConflict,
// foreign key violation (the parent row is missing) → ErrNotFound, the
// server's disk full → ErrStorageFull, a server that cannot be reached or
// is shutting down → ErrUnavailable. nil stays nil.
func dbErr(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("postgres: %s: %w", op, store.ErrNotFound)
	}
	if unavailable(err) {
		return fmt.Errorf("postgres: %s: %w: %w", op, store.ErrUnavailable, err)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case pgerrcode.UniqueViolation:
			return fmt.Errorf("postgres: %s: %w (constraint %s)", op, store.ErrConflict, pgErr.ConstraintName)
		case pgerrcode.ForeignKeyViolation:
			return fmt.Errorf("postgres: %s: %w (constraint %s)", op, store.ErrNotFound, pgErr.ConstraintName)
		case pgerrcode.DiskFull:
			return fmt.Errorf("postgres: %s: %w: %w", op, store.ErrStorageFull, err)
		}
	}
	return fmt.Errorf("postgres: %s: %w", op, err)
}

// unavailable reports whether err means the server could not be reached or
// went away: a failed connect, a dropped connection, or a server that is
// shutting down, starting up or out of connections. Timeouts and
// cancellations are left to store.Options.Bound, which tells the store
// deadline from the caller's.
func unavailable(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || pgconn.Timeout(err) {
		return false
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case pgerrcode.AdminShutdown, pgerrcode.CrashShutdown, pgerrcode.CannotConnectNow,
			pgerrcode.TooManyConnections, pgerrcode.IdleInTransactionSessionTimeout:
			return true
		}
		return pgerrcode.IsConnectionException(pgErr.Code)
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, pgconn.ErrConnClosed) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// nullTime stores the zero time as NULL.
func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// utc normalises a time read from the database: pgx returns timestamptz in
// the local zone; the store hands out UTC, like the engines' inputs.
func utc(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}
