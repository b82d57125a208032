// Package sqlite is the embedded engine of store.Store, on modernc.org/sqlite
// (pure Go, no cgo): what a node uses when no --database-url is given. One
// file, WAL mode, a single writer connection and a pool of readers that read
// the WAL concurrently with it.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/agentsite/agentsite/store"
)

// Connection settings. busyTimeout is how long a connection waits for
// another process's lock (a backup, the sqlite3 shell) before SQLITE_BUSY;
// our own writes never contend because they share one connection.
const (
	busyTimeout = 10 * time.Second
	// maxReaders bounds the read pool; reads in WAL mode do not block each
	// other or the writer.
	maxReaders = 16
)

// DB is the SQLite store.Store. It is safe for concurrent use.
type DB struct {
	// write has exactly one connection: SQLite allows one writer at a time,
	// and queueing in database/sql is cheaper and fairer than SQLITE_BUSY
	// retries. Its transactions BEGIN IMMEDIATE.
	write *sql.DB
	// read is the reader pool, opened query_only.
	read *sql.DB
	// wc and rc prepare the statements run on write and read.
	wc, rc *stmtCache
	// w and r run statements on write and read: named, timed and under the
	// store deadline (stmts).
	w, r   stmts
	opts   store.Options
	logger *slog.Logger
	// space is whether writes fail for lack of room (space.go).
	space space
	// conv writes conversations and messages, many turns' in one
	// transaction (groupcommit.go).
	conv *store.GroupWriter[convOp]
	// ckpt checkpoints the WAL in the background (checkpoint.go); nil on
	// a database opened read-only.
	ckpt *checkpointer
}

var _ store.Store = (*DB)(nil)

// Open opens (creating if needed) the database file at path, applies the
// embedded migrations and returns the store. It fails with an error wrapping
// store.ErrSchemaTooNew if the file was migrated by a newer binary, and with
// a clear error if a migration was left half-applied. The directory of path
// must exist. The file and its -wal/-shm files are made 0600 (secureFiles).
// The store has no deadline and no metrics (OpenWith sets them).
func Open(ctx context.Context, path string, logger *slog.Logger) (*DB, error) {
	return OpenWith(ctx, path, logger, store.Options{})
}

// OpenWith is Open with opts: every call of the store gets opts.Timeout as
// its deadline and every statement is recorded in opts.Metrics (stmts).
//
// When the disk is too full to open the database for writing (or to
// migrate it), and its schema is this binary's, the database is opened
// read-only instead (openReadOnly): reads are served, every write fails
// with store.ErrStorageFull, and StorageFull reports it.
func OpenWith(ctx context.Context, path string, logger *slog.Logger, opts store.Options) (*DB, error) {
	return openWith(ctx, path, logger, opts, nil)
}

// openWith is OpenWith with extra pragmas on the write connections (tests
// make the disk "full" with max_page_count).
func openWith(ctx context.Context, path string, logger *slog.Logger, opts store.Options, writePragmas []string) (*DB, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if path == "" || strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("sqlite: invalid database path %q (must be a file name without ? or #)", path)
	}
	if err := secureFiles(path, logger); err != nil {
		return nil, err
	}
	db, err := openWritable(ctx, path, logger, opts, writePragmas)
	if err != nil && !errors.Is(err, store.ErrSchemaTooNew) && noSpace(err, path) {
		return openReadOnly(ctx, path, logger, opts, err)
	}
	return db, err
}

// openWritable is the normal open: migrate, then the writer and the readers.
func openWritable(ctx context.Context, path string, logger *slog.Logger, opts store.Options, writePragmas []string) (*DB, error) {
	writeDSN := dsn(path, false)
	for _, p := range writePragmas {
		writeDSN += "&" + url.Values{"_pragma": {p}}.Encode()
	}
	if err := migrateUp(ctx, writeDSN, logger); err != nil {
		return nil, err
	}
	write, err := sql.Open("sqlite", writeDSN)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	write.SetMaxOpenConns(1)
	write.SetMaxIdleConns(1)
	write.SetConnMaxIdleTime(0)
	write.SetConnMaxLifetime(0)

	read, err := sql.Open("sqlite", dsn(path, true))
	if err != nil {
		write.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	n := min(max(4, runtime.GOMAXPROCS(0)), maxReaders)
	read.SetMaxOpenConns(n)
	read.SetMaxIdleConns(n)
	read.SetConnMaxIdleTime(0)
	read.SetConnMaxLifetime(0)

	db := &DB{write: write, read: read, wc: newStmtCache(write), rc: newStmtCache(read), opts: opts, logger: logger}
	db.conv = store.NewGroupWriter(maxConvBatch, db.commitConvBatch)
	db.space.dir = filepath.Dir(path)
	db.w, db.r = stmts{run: db.wc, opts: opts, note: db.noteWrite}, stmts{run: db.rc, opts: opts}
	if err := write.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	if err := db.Ping(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if err := db.startCheckpointer(path, checkpointEvery, checkpointWrites, checkpointAge); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// dsn builds the modernc DSN: the pragmas run on every new connection.
// synchronous=NORMAL is safe with WAL (a power cut may lose the last commits,
// never corrupt the file), and this is a cache the network refills.
func dsn(path string, readOnly bool) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "foreign_keys(1)")
	if readOnly {
		q.Add("_pragma", "query_only(1)")
		for _, p := range readerPragmas {
			q.Add("_pragma", p)
		}
	} else {
		q.Set("_txlock", "immediate")
		for _, p := range writerPragmas {
			q.Add("_pragma", p)
		}
	}
	return path + "?" + q.Encode()
}

// writerPragmas tune the one writer connection for big writes (an import
// of 1M agents, a mirror's fill: BENCHMARKS.md, "The 1M catalogue"):
//
//   - temp_store stays the default (a file): a statement that writes a page
//     of rows through triggers keeps a statement journal, and in memory
//     (temp_store MEMORY) SQLite builds it of 1 KiB chunks, allocated and
//     freed (madvise) by the thousand per statement: a fifth of an import's
//     CPU. Otherwise it is kept in memory in one chunk up to
//     stmtJournalSpill (stmtjournal.go), a file past that.
//   - a 32 MiB page cache (default 2 MiB): the catalogue's random-keyed
//     indexes (ids) outgrow 2 MiB within 100k listings, and then every
//     insert re-read its pages and spilled dirty ones mid-transaction.
//   - a checkpoint every 32,768 WAL pages (128 MiB, default 1,000): a page
//     written by several commits is copied back to the database once
//     (8,192 before: 5 % more of a 100k import's CPU). The WAL file keeps
//     its largest size on disk. This is the backstop: the checkpointer
//     (checkpoint.go) copies what a second wrote, off the writer's path,
//     so only a burst past 128 MiB in a second checkpoints in a COMMIT.
//
// The readers have their own (readerPragmas).
var writerPragmas = []string{"temp_store(DEFAULT)", "cache_size(-32768)", "wal_autocheckpoint(32768)"}

// readerPragmas give each reader a 128 KiB page cache (SQLite's default is
// 2,000 KiB). The readers are a pool (four on two cores), each with its own
// cache in C memory, outside the Go heap and its soft limit, and modernc's
// allocator gives a cached page (4 KiB and SQLite's few hundred bytes about
// it) an 8 KiB slot: at 100k listings under a distinct-query load the four
// reported 26 MB of cache between them (SQLITE_DBSTATUS_CACHE_USED, 4-9 MB
// each), nearly twice that in slots. What a search reads from the
// database is a page of listings by id, scattered over a file far bigger
// than any of these caches (~520 MB at 100k), which the operating system's
// page cache keeps anyway; at 512 KiB the four reported ~9 MB and the
// searches per second did not move (BENCHMARKS.md "Memory at 100k
// listings", stop 39), nor at 128 KiB, which took another ~10 MiB off the
// node's RSS (stop 40).
var readerPragmas = []string{"cache_size(-128)"}

// Ping checks the database is reachable (readiness).
func (db *DB) Ping(ctx context.Context) error {
	var one int
	return dbErr("ping", db.r.QueryRowContext(ctx, "-- name: ping\nSELECT 1").Scan(&one))
}

// Close lets SQLite refresh its planner statistics (PRAGMA optimize, cheap:
// it only analyzes what changed a lot) and closes both pools.
func (db *DB) Close() error {
	db.conv.Close()
	ckptErr := db.closeCheckpointer()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if db.space.readOnly == nil {
		if _, err := db.write.ExecContext(ctx, `PRAGMA optimize`); err != nil && !storageFull(err) {
			db.logger.Warn("sqlite: optimize on close failed", "err", err)
		}
	}
	return errors.Join(ckptErr, db.rc.Close(), db.wc.Close(), db.read.Close(), db.write.Close())
}

// inTx runs fn in a write transaction (BEGIN IMMEDIATE on the single writer
// connection): committed if fn returns nil, rolled back otherwise and on
// panic. The queries fn runs should be listed in warm so they are prepared
// before the transaction takes the connection.
func (db *DB) inTx(ctx context.Context, fn func(ctx context.Context, tx execer) error, warm ...string) error {
	return db.runTx(ctx, db.write, db.wc, nil, warm, fn)
}

// inReadTx runs fn in a read transaction on a reader connection: every query
// of fn sees the same snapshot.
func (db *DB) inReadTx(ctx context.Context, fn func(ctx context.Context, tx execer) error, warm ...string) error {
	return db.runTx(ctx, db.read, db.rc, &sql.TxOptions{ReadOnly: true}, warm, fn)
}

// runTx is one store call under the store deadline, warming included: fn
// gets the bounded context and must run its statements with it.
func (db *DB) runTx(ctx context.Context, pool *sql.DB, cache *stmtCache, opts *sql.TxOptions, warm []string, fn func(ctx context.Context, tx execer) error) error {
	ctx, end := db.opts.Bound(ctx)
	if pool == db.write {
		if err := db.space.readOnly; err != nil {
			return end(err)
		}
		cache.warm(ctx, warm...)
		err := end(db.tx(ctx, pool, cache, opts, fn))
		db.noteWrite(err, err == nil)
		return err
	}
	cache.warm(ctx, warm...)
	return end(db.tx(ctx, pool, cache, opts, fn))
}

func (db *DB) tx(ctx context.Context, pool *sql.DB, cache *stmtCache, opts *sql.TxOptions, fn func(ctx context.Context, tx execer) error) (err error) {
	start := time.Now()
	tx, err := pool.BeginTx(ctx, opts)
	db.opts.Metrics.Observe("begin", time.Since(start), err)
	if err != nil {
		return dbErr("begin", err)
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
	if err := fn(ctx, stmts{run: txStmts{tx: tx, cache: cache}, opts: store.Options{Metrics: db.opts.Metrics}}); err != nil {
		return err
	}
	start = time.Now()
	err = dbErr("commit", tx.Commit())
	db.opts.Metrics.Observe("commit", time.Since(start), err)
	return err
}

func (db *DB) rollback(tx *sql.Tx) {
	// database/sql has already rolled back if the context was cancelled;
	// ErrTxDone then is expected.
	if err := tx.Rollback(); err != nil && !errors.Is(err, sql.ErrTxDone) {
		db.logger.Warn("sqlite: rollback failed", "err", err)
	}
}

// dbErr wraps err with the operation and maps driver errors to the store's
// sentinels by SQLite result code: no rows → ErrNotFound, unique or primary
// key violation → ErrConflict, foreign key violation (the parent row is
// missing) → ErrNotFound, a full disk (SQLITE_FULL) → ErrStorageFull, a
// file locked by another process or that cannot be read or written →
// ErrUnavailable. nil stays nil.
func dbErr(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("sqlite: %s: %w", op, store.ErrNotFound)
	}
	var se *msqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return fmt.Errorf("sqlite: %s: %w (%w)", op, store.ErrConflict, err)
		case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
			return fmt.Errorf("sqlite: %s: %w (%w)", op, store.ErrNotFound, err)
		}
		switch se.Code() & 0xff { // the primary result code
		case sqlite3.SQLITE_FULL:
			return fmt.Errorf("sqlite: %s: %w: %w", op, store.ErrStorageFull, err)
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CANTOPEN:
			return fmt.Errorf("sqlite: %s: %w: %w", op, store.ErrUnavailable, err)
		}
	}
	return fmt.Errorf("sqlite: %s: %w", op, err)
}

// Times are stored as unix nanoseconds, UTC; the zero time is NULL.

// nanos converts t for a bind parameter.
func nanos(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixNano()
}

// fromNanos converts a scanned column back to a UTC time.
func fromNanos(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return time.Unix(0, n.Int64).UTC()
}

// boolInt converts a bool for a bind parameter (columns are INTEGER 0/1).
func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
