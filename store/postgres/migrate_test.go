package postgres_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/store/postgres"
	"github.com/agentsite/agentsite/store/postgres/pgtest"
)

// exec runs sql on the database at url.
func exec(t *testing.T, url, sql string) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func TestOpenIsIdempotent(t *testing.T) {
	url := pgtest.NewDatabase(t)
	for range 2 {
		db, err := postgres.Open(context.Background(), url, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatalf("open migrated database: %v", err)
		}
		db.Close()
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	url := pgtest.NewDatabase(t)
	exec(t, url, `UPDATE schema_migrations SET version = 9999`)
	_, err := postgres.Open(context.Background(), url, slog.New(slog.DiscardHandler))
	if !errors.Is(err, store.ErrSchemaTooNew) {
		t.Fatalf("Open on a schema at version 9999: got %v, want ErrSchemaTooNew", err)
	}
	if !strings.Contains(err.Error(), "9999") || !strings.Contains(err.Error(), "up to 1") {
		t.Errorf("error should name both versions: %v", err)
	}
}

func TestOpenRefusesDirtySchema(t *testing.T) {
	url := pgtest.NewDatabase(t)
	exec(t, url, `UPDATE schema_migrations SET dirty = true`)
	_, err := postgres.Open(context.Background(), url, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "dirty") {
		t.Fatalf("Open on a dirty schema: got %v, want a dirty-schema error", err)
	}
}

func TestOpenMigratesEmptyDatabase(t *testing.T) {
	url := pgtest.NewDatabase(t)
	exec(t, url, `DROP SCHEMA public CASCADE; CREATE SCHEMA public`)
	db, err := postgres.Open(context.Background(), url, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("open empty database: %v", err)
	}
	defer db.Close()
	if _, err := db.Stats(context.Background()); err != nil {
		t.Fatalf("stats after migrating: %v", err)
	}
}

func TestOpenBadURL(t *testing.T) {
	_, err := postgres.Open(context.Background(), "postgres://u:secret@[::1", nil)
	if err == nil || strings.Contains(err.Error(), "secret") {
		t.Fatalf("bad URL: got %v, want an error without the password", err)
	}
}
