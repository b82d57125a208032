package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"

	"github.com/golang-migrate/migrate/v4/database"
	"github.com/golang-migrate/migrate/v4/source/iofs"
	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/agentsite/agentsite/migrations"
	"github.com/agentsite/agentsite/store"
)

// lowSpaceBytes is the free space under which a failure to open the
// database for writing is taken for a full disk: less than SQLite needs
// for its shared-memory index (32 KiB) and a few pages of log.
const lowSpaceBytes = 1 << 20

// space is whether the database has room for writes.
type space struct {
	// dir is the database's directory, named in the messages: where to
	// free space.
	dir string
	// full is set when a write fails for lack of room, and cleared once
	// there is room again (hasRoom). A write that succeeds proves little:
	// on a full disk, writes that fit in pages the database already has
	// still succeed.
	full atomic.Bool
	// capPages is SetMaxSize's cap, in pages; 0: none.
	capPages atomic.Int64
	// readOnly, when set, is the error of every write: the database was
	// opened read-only because the disk was full at start (openReadOnly).
	readOnly error
}

// StorageFull reports whether writes fail because the disk is full
// (/readyz says so; the node goes on serving reads): since a write failed
// for lack of room, until the disk has room again, or for good when the
// database was opened read-only.
func (db *DB) StorageFull() bool {
	switch {
	case db.space.readOnly != nil:
		return true
	case !db.space.full.Load():
		return false
	}
	room, known := db.hasRoom()
	if room && db.space.full.CompareAndSwap(true, false) {
		db.logger.Info("sqlite: the disk has room again: writes are taken", "dir", db.space.dir, "free_bytes", freeBytes(db.space.dir))
	}
	return known && !room
}

// hasRoom tells whether the disk has room for writes again: at least
// lowSpaceBytes free, and the database under SetMaxSize's cap. known is
// false when the free space cannot be told (then a write that changed a
// row clears the state: noteWrite).
func (db *DB) hasRoom() (room, known bool) {
	free := freeBytes(db.space.dir)
	if free >= 0 && free < lowSpaceBytes {
		return false, true
	}
	if capPages := db.space.capPages.Load(); capPages > 0 {
		var pages int64
		if err := db.read.QueryRow(`PRAGMA page_count`).Scan(&pages); err != nil || pages >= capPages {
			return false, true
		}
		return true, true
	}
	return free >= 0, free >= 0
}

// noteWrite hears how a write on the write connection ended: the node
// logs once when writes start failing for lack of room.
func (db *DB) noteWrite(err error, changed bool) {
	switch {
	case storageFull(err):
		if db.space.full.CompareAndSwap(false, true) {
			db.logger.Error("sqlite: the disk is full: writes are refused (507 storage_full), reads still served; free space in the data dir, writes resume by themselves",
				"dir", db.space.dir, "free_bytes", freeBytes(db.space.dir), "err", err)
		}
	case err == nil && changed && db.space.readOnly == nil:
		if db.ckpt != nil {
			db.ckpt.writes.Add(1)
		}
		if _, known := db.hasRoom(); !known {
			db.space.full.Store(false)
		}
	}
}

// storageFull reports whether err is SQLite's SQLITE_FULL (mapped or not;
// golang-migrate's errors keep the driver's in OrigErr).
func storageFull(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, store.ErrStorageFull) {
		return true
	}
	var se *msqlite.Error
	if errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_FULL {
		return true
	}
	var de *database.Error
	if errors.As(err, &de) {
		return storageFull(de.OrigErr)
	}
	var dv database.Error
	return errors.As(err, &dv) && storageFull(dv.OrigErr)
}

// noSpace reports whether err, a failure to open or migrate the database
// at path, is for lack of room: SQLITE_FULL, or any failure on a disk
// with almost no free space (SQLite cannot even grow its shared-memory
// index there: a disk I/O error, not SQLITE_FULL).
func noSpace(err error, path string) bool {
	if storageFull(err) {
		return true
	}
	free := freeBytes(filepath.Dir(path))
	return free >= 0 && free < lowSpaceBytes
}

// openReadOnly opens the database at path read-only after cause, a
// failure to open it for writing on a full disk: immutable (no lock, no
// log, no shared memory: nothing to write), every write failing with
// store.ErrStorageFull. It refuses a database whose schema is not this
// binary's (a migration needs room), saying so.
func openReadOnly(ctx context.Context, path string, logger *slog.Logger, opts store.Options, cause error) (*DB, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	dir := filepath.Dir(path)
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, cause)
	}
	q := url.Values{}
	q.Set("immutable", "1")
	q.Add("_pragma", "query_only(1)")
	for _, p := range readerPragmas {
		q.Add("_pragma", p)
	}
	roDSN := (&url.URL{Scheme: "file", Path: abs, RawQuery: q.Encode()}).String()
	read, err := sql.Open("sqlite", roDSN)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, cause)
	}
	n := min(max(4, runtime.GOMAXPROCS(0)), maxReaders)
	read.SetMaxOpenConns(n)
	read.SetMaxIdleConns(n)
	read.SetConnMaxIdleTime(0)
	read.SetConnMaxLifetime(0)
	if err := schemaCurrent(ctx, read); err != nil {
		read.Close()
		return nil, fmt.Errorf("sqlite: the disk is full (free space in %s and start again): %w; %w (opening it: %w)", dir, store.ErrStorageFull, err, cause)
	}
	// The write pool is never used for a write (space.readOnly refuses
	// them first); it is there so that the statement caches and Close
	// need no special case.
	write, err := sql.Open("sqlite", roDSN)
	if err != nil {
		read.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, cause)
	}
	write.SetMaxOpenConns(1)
	refused := fmt.Errorf("sqlite: the database is open read-only, its disk was full when the node started: %w", store.ErrStorageFull)
	db := &DB{write: write, read: read, wc: newStmtCache(write), rc: newStmtCache(read), opts: opts, logger: logger}
	db.conv = store.NewGroupWriter(maxConvBatch, db.commitConvBatch)
	db.space.dir, db.space.readOnly = dir, refused
	db.space.full.Store(true)
	db.w, db.r = stmts{run: refusing{refused}, opts: opts, note: db.noteWrite}, stmts{run: db.rc, opts: opts}
	if err := db.Ping(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite: open %s read-only: %w (opening it for writing: %w)", path, err, cause)
	}
	attrs := []any{"dir", dir, "free_bytes", freeBytes(dir), "err", cause}
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > 0 {
		// Immutable reads see the database file only: what the log holds
		// comes back with the next writable start.
		attrs = append(attrs, "unread_wal_bytes", fi.Size())
	}
	logger.Error("sqlite: the disk is full: the database is open read-only; reads are served, writes refused (507 storage_full); free space in the data dir and restart the node", attrs...)
	return db, nil
}

// schemaCurrent checks that the database read through pool is at this
// binary's schema version and clean.
func schemaCurrent(ctx context.Context, pool *sql.DB) error {
	src, err := iofs.New(migrations.SQLite, "sqlite")
	if err != nil {
		return err
	}
	latest, err := latestVersion(src)
	src.Close()
	if err != nil {
		return err
	}
	var version uint
	var dirty bool
	err = pool.QueryRowContext(ctx, `SELECT version, dirty FROM schema_migrations LIMIT 1`).Scan(&version, &dirty)
	switch {
	case err != nil:
		return fmt.Errorf("the database cannot be read (not migrated yet: the migration needs room): %w", err)
	case dirty || version != latest:
		return fmt.Errorf("the database is at schema version %d (dirty %v) and this binary needs version %d: the migration needs room", version, dirty, latest)
	}
	return nil
}

// refusing is the write runner of a read-only database: every statement
// fails with err.
type refusing struct{ err error }

func (r refusing) exec(context.Context, string, []any) (sql.Result, error) { return nil, r.err }
func (r refusing) query(context.Context, string, []any) (*sql.Rows, error) { return nil, r.err }

// SetMaxSize caps the database at maxBytes (rounded down to pages, and
// never below its size now): a write past it fails with
// store.ErrStorageFull, exactly as on a full disk (SQLITE_FULL). The cap
// holds while this store is open; 0 lifts it.
func (db *DB) SetMaxSize(ctx context.Context, maxBytes int64) error {
	if db.space.readOnly != nil {
		return db.space.readOnly
	}
	pages := int64(0xfffffffe) // SQLite's largest
	if maxBytes > 0 {
		var pageSize int64
		if err := db.write.QueryRowContext(ctx, `PRAGMA page_size`).Scan(&pageSize); err != nil {
			return dbErr("page size", err)
		}
		pages = max(maxBytes/pageSize, 1)
	}
	// The pragma answers the cap it set (never below the size now).
	var set int64
	if err := db.write.QueryRowContext(ctx, fmt.Sprintf(`PRAGMA max_page_count = %d`, pages)).Scan(&set); err != nil {
		return dbErr("set max size", err)
	}
	if maxBytes <= 0 {
		set = 0
	}
	db.space.capPages.Store(set)
	return nil
}
