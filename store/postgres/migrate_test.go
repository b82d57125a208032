package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agentsite/agentsite/migrations"
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
	ups, _ := fs.Glob(migrations.Postgres, "postgres/*.up.sql")
	latest := 0
	for _, u := range ups { // numbered NNNN_name.up.sql, maybe with gaps
		if n, err := strconv.Atoi(strings.TrimPrefix(u, "postgres/")[:4]); err == nil && n > latest {
			latest = n
		}
	}
	if !strings.Contains(err.Error(), "9999") || !strings.Contains(err.Error(), fmt.Sprintf("up to %d", latest)) {
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

// TestMigrationBindsOldConversations: conversations made before migration 2
// are bound to the owner and publisher of the agent the cache holds, so an
// upgrade does not leave them free to reach a new owner's backend.
func TestMigrationBindsOldConversations(t *testing.T) {
	url := pgtest.NewDatabase(t)
	// Down to version 1; opening runs every later migration up again.
	for _, f := range []string{"postgres/0006_listing_changes.down.sql", "postgres/0004_search_tiers.down.sql", "postgres/0003_agent_health.down.sql", "postgres/0002_conversation_agent_owner.down.sql"} {
		down, err := migrations.Postgres.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		exec(t, url, string(down))
	}
	exec(t, url, `UPDATE schema_migrations SET version = 1`)
	exec(t, url, `INSERT INTO agents (id, seq, status, owner, expires_at, last_seen, updated_at, search)
		VALUES ('agent-1', 1, 'online', 'alice', now(), now(), now(), ''::tsvector)`)
	exec(t, url, `INSERT INTO agent_records (id, name, publisher, issued_at) VALUES ('agent-1', 'bot', '12D3KooWHost', now())`)
	exec(t, url, `INSERT INTO conversations (id, agent_id, owner_key, created_at, updated_at)
		VALUES ('known', 'agent-1', 'user:1', now(), now()), ('unknown', 'agent-2', 'user:1', now(), now())`)

	db, err := postgres.Open(context.Background(), url, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("open a version 1 database: %v", err)
	}
	defer db.Close()
	for id, want := range map[string][2]string{"known": {"alice", "12D3KooWHost"}, "unknown": {"", ""}} {
		c, err := db.GetConversation(context.Background(), id)
		if err != nil {
			t.Fatalf("GetConversation(%s): %v", id, err)
		}
		if got := [2]string{c.AgentOwner, c.AgentPublisher}; got != want {
			t.Errorf("conversation %s after migrating: agent owner/publisher = %q, want %q", id, got, want)
		}
	}
}

// TestMigrationNumbersExistingListings: migration 6 numbers the listings
// already stored in first-seen order, tombstones included, and a listing
// written afterwards gets a larger number.
func TestMigrationNumbersExistingListings(t *testing.T) {
	url := pgtest.NewDatabase(t)
	down, err := migrations.Postgres.ReadFile("postgres/0006_listing_changes.down.sql")
	if err != nil {
		t.Fatal(err)
	}
	exec(t, url, string(down))
	exec(t, url, `UPDATE schema_migrations SET version = 5`)
	// Stale: 0007 turns the online listings of hosts never heard stale,
	// which would number them again.
	insert := func(id string, pos int64, tombstone bool) {
		t.Helper()
		exec(t, url, fmt.Sprintf(`INSERT INTO agents (id, pos, seq, status, tombstone, expires_at, last_seen, updated_at, search)
			OVERRIDING SYSTEM VALUE VALUES ('%s', %d, 1, 'stale', %v, now(), now(), now(), ''::tsvector);
			INSERT INTO agent_records (id, name, issued_at) VALUES ('%[1]s', '%[1]s', now())`, id, pos, tombstone))
	}
	insert("a3", 3, false)
	insert("a7", 7, true)

	db, err := postgres.Open(context.Background(), url, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("open a version 5 database: %v", err)
	}
	defer db.Close()
	insert("a8", 8, false)
	docs, err := db.ListingChanges(context.Background(), 0, nil, 10)
	if err != nil {
		t.Fatal(err)
	}
	var got [][3]any
	for _, d := range docs {
		got = append(got, [3]any{d.Pos, d.ChangeSeq, d.Tombstone})
	}
	want := [][3]any{{int64(3), int64(3), false}, {int64(7), int64(7), true}, {int64(8), int64(8), false}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after migrating: (pos, change number, tombstone) = %v, want %v", got, want)
	}
}
