package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/store/sqlite"
	"github.com/agentsite/agentsite/store/storetest"
)

// mustOpen opens a fresh, migrated database in tb's temporary directory and
// closes it when tb ends.
func mustOpen(tb testing.TB) *sqlite.DB {
	tb.Helper()
	return mustOpenWith(tb, store.Options{})
}

// mustOpenWith is mustOpen with a store deadline and metrics.
func mustOpenWith(tb testing.TB, opts store.Options) *sqlite.DB {
	tb.Helper()
	db, err := sqlite.OpenWith(tb.Context(), filepath.Join(tb.TempDir(), "agentsite.db"), nil, opts)
	if err != nil {
		tb.Fatalf("open: %v", err)
	}
	tb.Cleanup(func() {
		if err := db.Close(); err != nil {
			tb.Errorf("close: %v", err)
		}
	})
	return db
}

// TestConformance holds the SQLite engine to the behaviour both engines
// share, opened as a node opens it: with a store deadline and metrics.
func TestConformance(t *testing.T) {
	storetest.RunObserved(t, openWith)
}

// TestMetrics: the statement wrapper records every statement by name.
func TestMetrics(t *testing.T) {
	storetest.Metrics(t, openWith)
}

func openWith(t *testing.T, opts store.Options) store.Store { return mustOpenWith(t, opts) }

// setVersion rewrites golang-migrate's bookkeeping behind the engine's back.
func setVersion(t *testing.T, path string, version int, dirty bool) {
	t.Helper()
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(`UPDATE schema_migrations SET version = ?, dirty = ?`, version, dirty); err != nil {
		t.Fatalf("set schema version: %v", err)
	}
}

func openMigrated(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agentsite.db")
	db, err := sqlite.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	return path
}

func TestSchemaTooNew(t *testing.T) {
	path := openMigrated(t)
	setVersion(t, path, 9999, false)
	db, err := sqlite.Open(t.Context(), path, nil)
	if err == nil {
		db.Close()
		t.Fatal("Open of a database migrated by a newer binary succeeded")
	}
	if !errors.Is(err, store.ErrSchemaTooNew) {
		t.Fatalf("Open = %v, want ErrSchemaTooNew", err)
	}
	for _, want := range []string{"9999", "upgrade", "--data-dir"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestDirtySchema(t *testing.T) {
	path := openMigrated(t)
	setVersion(t, path, 1, true)
	db, err := sqlite.Open(t.Context(), path, nil)
	if err == nil {
		db.Close()
		t.Fatal("Open of a dirty database succeeded")
	}
	if errors.Is(err, store.ErrSchemaTooNew) || !strings.Contains(err.Error(), "dirty") {
		t.Fatalf("Open = %v, want a dirty-schema error", err)
	}
}

func TestReopenKeepsData(t *testing.T) {
	path := openMigrated(t)
	ctx := context.Background()
	db, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateUser(ctx, "alice", "h"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db, err = sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer db.Close()
	if _, err := db.GetUserByHandle(ctx, "alice"); err != nil {
		t.Fatalf("after reopen: %v", err)
	}
}

func TestOpenBadPath(t *testing.T) {
	for _, p := range []string{"", "a?b", filepath.Join(t.TempDir(), "missing-dir", "x.db")} {
		if db, err := sqlite.Open(t.Context(), p, nil); err == nil {
			db.Close()
			t.Errorf("Open(%q) succeeded", p)
		}
	}
}

// TestLockedFileIsUnavailable: another process holding the write lock past
// the store deadline makes writes fail with ErrUnavailable, in time, be
// they one statement or a transaction; a caller's own earlier deadline
// keeps its error.
func TestLockedFileIsUnavailable(t *testing.T) {
	const timeout = 200 * time.Millisecond
	path := filepath.Join(t.TempDir(), "agentsite.db")
	db, err := sqlite.OpenWith(t.Context(), path, nil, store.Options{Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	other, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), `BEGIN EXCLUSIVE`); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(context.Background(), `ROLLBACK`)

	upsertNode := func(ctx context.Context) error {
		return db.UpsertNode(ctx, store.Node{PeerID: "p", Status: store.StatusOnline, LastHeartbeat: time.Now()})
	}
	for name, write := range map[string]func(ctx context.Context) error{
		"statement": upsertNode,
		"transaction": func(ctx context.Context) error {
			_, _, err := db.UseAPIToken(ctx, []byte("hash"), time.Now())
			return err
		},
	} {
		// The file stays locked, so only a deadline ends the write: the
		// store's gives ErrUnavailable, this far later one of the caller's
		// would not.
		guard, cancelGuard := context.WithTimeout(t.Context(), 30*time.Second)
		err := write(guard)
		cancelGuard()
		if !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s on a locked file: %v, want ErrUnavailable (the %v store deadline)", name, err, timeout)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), timeout/4)
	defer cancel()
	if err := upsertNode(ctx); errors.Is(err, store.ErrUnavailable) {
		t.Errorf("caller's own earlier deadline: %v, want not ErrUnavailable", err)
	}
}

// TestDatabaseFilesAre0600: the database holds backend API keys and
// session tokens, so it and its -wal and -shm files are created 0600, and
// an existing database open to others is tightened at open.
func TestDatabaseFilesAre0600(t *testing.T) {
	check := func(t *testing.T, path string) {
		t.Helper()
		db, err := sqlite.Open(t.Context(), path, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		// A write, so the WAL and its index exist while the store is open.
		if err := db.UpsertNode(t.Context(), store.Node{PeerID: "p", Status: store.StatusOnline, LastHeartbeat: time.Now()}); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{path, path + "-wal", path + "-shm"} {
			st, err := os.Stat(p)
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			if m := st.Mode().Perm(); m != 0o600 {
				t.Errorf("%s has mode %#o, want 0600", filepath.Base(p), m)
			}
		}
	}
	t.Run("new", func(t *testing.T) {
		check(t, filepath.Join(t.TempDir(), "agentsite.db"))
	})
	t.Run("existing", func(t *testing.T) {
		path := openMigrated(t) // closed: no -wal left
		if err := os.WriteFile(path+"-wal", nil, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{path, path + "-wal"} {
			if err := os.Chmod(p, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		check(t, path)
	})
}
