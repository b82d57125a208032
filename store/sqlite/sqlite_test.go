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

	"github.com/prometheus/client_golang/prometheus"
	_ "modernc.org/sqlite"

	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/store/sqlite"
	"github.com/agentsite/agentsite/store/storetest"
)

// mustOpen opens a fresh, migrated database in tb's temporary directory and
// closes it when tb ends.
func mustOpen(tb testing.TB) *sqlite.DB {
	tb.Helper()
	db, err := sqlite.Open(tb.Context(), filepath.Join(tb.TempDir(), "agentsite.db"), nil)
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

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return mustOpen(t) })
}

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
// the store deadline makes writes fail with ErrUnavailable, in time.
func TestLockedFileIsUnavailable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentsite.db")
	db, err := sqlite.Open(t.Context(), path, nil)
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

	st := store.Instrument(db, prometheus.NewRegistry(), 200*time.Millisecond)
	start := time.Now()
	err = st.UpsertNode(t.Context(), store.Node{PeerID: "p", Status: store.StatusOnline, LastHeartbeat: time.Now()})
	if !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("write to a locked file: %v, want ErrUnavailable", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("write to a locked file took %v, want about the 200ms deadline", took)
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
