package main

import (
	"context"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agentsite/agentsite/store/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestKeepDB: --keep-db seeds a Postgres database once and keeps it; the
// next run with the same --listings finds the seed and does not seed
// again, and one with another --listings, or after a seed that did not
// finish, is refused rather than seeding over listings.
func TestKeepDB(t *testing.T) {
	ctx := t.Context()
	u := pgtest.NewDatabase(t) // empty and migrated; dropped at the end
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(pu.Path, "/")
	cfg, err := parseFlags([]string{"--store", "postgres", "--keep-db", name, "--postgres-url", pgtest.ServerURL()}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	progress := func(string, ...any) {}
	open := func() *database {
		t.Helper()
		db, err := newDatabase(ctx, cfg, t.TempDir(), progress)
		if err != nil {
			t.Fatal(err)
		}
		if db.name != name || !db.kept {
			t.Fatalf("--keep-db %s: database %s, kept %v", name, db.name, db.kept)
		}
		return db
	}
	const n = 40
	db := open()
	if ok, err := db.seeded(ctx, n); ok || err != nil {
		t.Fatalf("an empty database: seeded %v, %v; want false, nil", ok, err)
	}
	if err := seed(ctx, db, n, quotaFromSeeder, slog.New(slog.DiscardHandler), progress); err != nil {
		t.Fatal(err)
	}
	if ok, err := db.seeded(ctx, n); ok || err == nil || !strings.Contains(err.Error(), "no finished seed") {
		t.Errorf("listings but no mark (a seed stopped half way): seeded %v, %v; want an error", ok, err)
	}
	if err := db.markSeeded(ctx, n); err != nil {
		t.Fatal(err)
	}
	db.drop(progress)

	db = open() // the next run
	if ok, err := db.seeded(ctx, n); !ok || err != nil {
		t.Errorf("the next run: seeded %v, %v; want true", ok, err)
	}
	if ok, err := db.seeded(ctx, n+1); ok || err == nil || !strings.Contains(err.Error(), "another seed") {
		t.Errorf("another --listings: seeded %v, %v; want an error", ok, err)
	}
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatalf("the kept database: %v", err)
	}
	defer conn.Close(context.Background())
	var count int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM agents`).Scan(&count); err != nil || count != n {
		t.Errorf("the kept database holds %d listings (%v), want %d", count, err, n)
	}
	// As the server's sweep would leave them: every listing stale, every
	// publisher a node heard once and silent since (not never heard).
	var notStale, nodes int
	if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM agents WHERE status <> 'stale'),
	(SELECT count(*) FROM nodes WHERE status = 'stale')`).Scan(&notStale, &nodes); err != nil {
		t.Fatal(err)
	}
	if notStale != 0 || nodes != numPublishers {
		t.Errorf("after the seed: %d listings not stale, %d stale nodes; want 0 and %d", notStale, nodes, numPublishers)
	}

	if _, err := parseFlags([]string{"--store", "sqlite", "--keep-db", "x"}, io.Discard); err == nil {
		t.Error("--keep-db with --store sqlite: no error")
	}
}
