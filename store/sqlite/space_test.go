package sqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentsite/agentsite/store"
)

// fill writes sessions of 4 KiB until a write fails, and returns that
// error (nil if 10,000 writes fit).
func fill(t *testing.T, db *DB) error {
	t.Helper()
	data := []byte(strings.Repeat("x", 4096))
	for i := range 10_000 {
		if err := db.SessionCommit(t.Context(), fmt.Sprintf("fill-%d", i), data, time.Now().Add(time.Hour)); err != nil {
			return err
		}
	}
	return nil
}

// TestStorageFull: a write past the database's room (max_page_count
// reached gives SQLITE_FULL, as a full disk does) fails with
// store.ErrStorageFull, StorageFull says so and reads still work; a
// commit that changes nothing does not clear it, a real write once there
// is room does.
func TestStorageFull(t *testing.T) {
	ctx := t.Context()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "full.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.CreateUser(ctx, "alice", "hash"); err != nil {
		t.Fatal(err)
	}
	if err := db.SetMaxSize(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := fill(t, db); !errors.Is(err, store.ErrStorageFull) {
		t.Fatalf("write on a full database: %v, want ErrStorageFull", err)
	}
	if _, err := db.CreateUser(ctx, "bob", strings.Repeat("h", 8192)); !errors.Is(err, store.ErrStorageFull) {
		t.Fatalf("create user on a full database: %v, want ErrStorageFull", err)
	}
	if !db.StorageFull() {
		t.Fatal("StorageFull is false after SQLITE_FULL")
	}
	if u, err := db.GetUserByHandle(ctx, "alice"); err != nil || u.Handle != "alice" {
		t.Errorf("read on a full database: %+v, %v", u, err)
	}
	if err := db.Ping(ctx); err != nil {
		t.Errorf("ping on a full database: %v", err)
	}
	if err := db.SessionDeleteExpired(ctx, time.Unix(0, 0)); err != nil {
		t.Fatalf("a write that deletes nothing: %v", err)
	}
	if !db.StorageFull() {
		t.Error("a commit that changed nothing cleared StorageFull")
	}
	if err := db.SetMaxSize(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateUser(ctx, "carol", "hash"); err != nil {
		t.Fatalf("write once there is room: %v", err)
	}
	if db.StorageFull() {
		t.Error("StorageFull still true after a write succeeded")
	}
}

// TestOpenOnFullDisk: a restart on a full disk. When no migration is due
// the database opens, serves reads and refuses writes with
// ErrStorageFull; a migration that does not fit is refused with a message
// that says where to free space; and the read-only open (what a disk too
// full to open for writing gets) serves reads and refuses every write.
func TestOpenOnFullDisk(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	path := filepath.Join(dir, "agentsite.db")
	db, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateUser(ctx, "alice", "hash"); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	t.Run("first write", func(t *testing.T) {
		db, err := openWith(ctx, path, nil, store.Options{}, []string{"max_page_count(1)"})
		if err != nil {
			t.Fatalf("open on a full disk, schema current: %v", err)
		}
		defer db.Close()
		// (StorageFull needs to know the cap, which a pragma of the DSN
		// does not tell it: TestStorageFull, with SetMaxSize.)
		if err := fill(t, db); !errors.Is(err, store.ErrStorageFull) {
			t.Fatalf("first write: %v, want ErrStorageFull", err)
		}
		if u, err := db.GetUserByHandle(ctx, "alice"); err != nil || u.Handle != "alice" {
			t.Errorf("read: %+v, %v", u, err)
		}
	})

	t.Run("migration", func(t *testing.T) {
		fresh := filepath.Join(t.TempDir(), "fresh.db")
		_, err := openWith(ctx, fresh, nil, store.Options{}, []string{"max_page_count(1)"})
		if !errors.Is(err, store.ErrStorageFull) || !strings.Contains(err.Error(), "free space in "+filepath.Dir(fresh)) ||
			!strings.Contains(err.Error(), "migration needs room") {
			t.Fatalf("migration on a full disk: %v, want ErrStorageFull saying where to free space", err)
		}
	})

	t.Run("read-only", func(t *testing.T) {
		cause := errors.New("disk I/O error (4874)")
		db, err := openReadOnly(ctx, path, nil, store.Options{}, cause)
		if err != nil {
			t.Fatal(err)
		}
		if !db.StorageFull() {
			t.Error("a read-only database is not StorageFull")
		}
		if u, err := db.GetUserByHandle(ctx, "alice"); err != nil || u.Handle != "alice" {
			t.Errorf("read: %+v, %v", u, err)
		}
		if _, err := db.CreateUser(ctx, "bob", "hash"); !errors.Is(err, store.ErrStorageFull) {
			t.Errorf("create user: %v, want ErrStorageFull", err)
		}
		if err := db.SessionCommit(ctx, "t", []byte("x"), time.Now().Add(time.Hour)); !errors.Is(err, store.ErrStorageFull) {
			t.Errorf("session commit: %v, want ErrStorageFull", err)
		}
		if err := db.InBatch(ctx, func(context.Context, store.Tx) error { return nil }); !errors.Is(err, store.ErrStorageFull) {
			t.Errorf("batch: %v, want ErrStorageFull", err)
		}
		if _, _, err := db.UseAPIToken(ctx, []byte("nope"), time.Now()); !errors.Is(err, store.ErrStorageFull) {
			t.Errorf("transaction: %v, want ErrStorageFull", err)
		}
		if err := db.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		// A database not yet migrated cannot be served.
		if _, err := openReadOnly(ctx, filepath.Join(t.TempDir(), "none.db"), nil, store.Options{}, cause); !errors.Is(err, store.ErrStorageFull) {
			t.Errorf("read-only open of an empty database: %v, want ErrStorageFull", err)
		}
	})
}
