package sqlite_test

import (
	"database/sql"
	"fmt"
	"testing"

	"github.com/agentsite/agentsite/migrations"
	"github.com/agentsite/agentsite/store/sqlite"
)

// TestMigrationBindsOldConversations: conversations made before migration 2
// are bound to the owner and publisher of the agent the cache holds, so an
// upgrade does not leave them free to reach a new owner's backend.
func TestMigrationBindsOldConversations(t *testing.T) {
	path := openMigrated(t)
	// Down to version 1; reopening runs every later migration up again.
	var downs []string
	for _, f := range []string{"sqlite/0006_listing_changes.down.sql", "sqlite/0005_search_head_fts.down.sql", "sqlite/0004_public_json.down.sql", "sqlite/0003_agent_health.down.sql", "sqlite/0002_conversation_agent_owner.down.sql"} {
		down, err := migrations.SQLite.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		downs = append(downs, string(down))
	}
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		downs[0], downs[1], downs[2], downs[3], downs[4],
		`UPDATE schema_migrations SET version = 1, dirty = 0`,
		`INSERT INTO agents (id, name, publisher, owner, seq, issued_at, expires_at, status) VALUES ('agent-1', 'bot', '12D3KooWHost', 'alice', 1, 0, 0, 'online')`,
		`INSERT INTO conversations (id, agent_id, owner_key, created_at, updated_at) VALUES ('known', 'agent-1', 'user:1', 0, 0), ('unknown', 'agent-2', 'user:1', 0, 0)`,
	} {
		if _, err := raw.Exec(q); err != nil {
			raw.Close()
			t.Fatalf("%s: %v", q, err)
		}
	}
	raw.Close()

	db, err := sqlite.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatalf("open a version 1 database: %v", err)
	}
	defer db.Close()
	for id, want := range map[string][2]string{"known": {"alice", "12D3KooWHost"}, "unknown": {"", ""}} {
		c, err := db.GetConversation(t.Context(), id)
		if err != nil {
			t.Fatalf("GetConversation(%s): %v", id, err)
		}
		if got := [2]string{c.AgentOwner, c.AgentPublisher}; got != want {
			t.Errorf("conversation %s after migrating: agent owner/publisher = %q, want %q", id, got, want)
		}
	}
}

// TestMigrationFillsHeadIndexes: migration 5 fills agents_fts_title and
// agents_fts_head from the listings already stored (tombstones left out),
// and its triggers keep them with agents_fts afterwards.
func TestMigrationFillsHeadIndexes(t *testing.T) {
	path := openMigrated(t)
	down6, err := migrations.SQLite.ReadFile("sqlite/0006_listing_changes.down.sql")
	if err != nil {
		t.Fatal(err)
	}
	down, err := migrations.SQLite.ReadFile("sqlite/0005_search_head_fts.down.sql")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	exec := func(q string) {
		t.Helper()
		if _, err := raw.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(string(down6))
	exec(string(down))
	exec(`UPDATE schema_migrations SET version = 4, dirty = 0`)
	exec(`INSERT INTO agents (pos, id, name, display_name, description, tags, seq, issued_at, expires_at, status, tombstone) VALUES
		(1, 'a1', 'weather-bot', 'Weather Bot', 'forecasts', '["geo"]', 1, 0, 0, 'online', 0),
		(2, 'a2', 'geo-bot', 'Geo Bot', 'weather maps', '["weather"]', 1, 0, 0, 'online', 0),
		(3, 'a3', 'gone', 'Gone', 'weather', '["weather"]', 1, 0, 0, 'online', 1)`)

	matches := func(when string, want map[string]string) {
		t.Helper()
		for table, w := range want {
			var got string
			q := `SELECT coalesce(group_concat(rowid), '') FROM (SELECT rowid FROM ` + table + ` WHERE ` + table + ` MATCH '"weather"*' ORDER BY rowid)`
			if err := raw.QueryRow(q).Scan(&got); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			if got != w {
				t.Errorf("%s: %s matches weather* at rowids %q, want %q", when, table, got, w)
			}
		}
	}

	db, err := sqlite.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatalf("open a version 4 database: %v", err)
	}
	defer db.Close()
	matches("after migrating", map[string]string{"agents_fts": "1,2", "agents_fts_title": "1", "agents_fts_head": "1,2"})
	// Writes after the migration go through the new triggers.
	exec(`UPDATE agents SET display_name = 'Sky Bot', name = 'sky-bot' WHERE pos = 1`)
	exec(`INSERT INTO agents (pos, id, name, seq, issued_at, expires_at, status) VALUES (4, 'a4', 'weatherly', 1, 0, 0, 'online')`)
	exec(`UPDATE agents SET tombstone = 1 WHERE pos = 2`)
	matches("after writes", map[string]string{"agents_fts": "4", "agents_fts_title": "4", "agents_fts_head": "4"})
}

// TestMigrationNumbersExistingListings: migration 6 numbers the listings
// already stored in first-seen order, tombstones included, and a listing
// written afterwards gets a larger number.
func TestMigrationNumbersExistingListings(t *testing.T) {
	path := openMigrated(t)
	down, err := migrations.SQLite.ReadFile("sqlite/0006_listing_changes.down.sql")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, q := range []string{
		string(down),
		`UPDATE schema_migrations SET version = 5, dirty = 0`,
		// Stale: 0007 turns the online listings of hosts never heard
		// stale, which would number them again.
		`INSERT INTO agents (pos, id, name, seq, issued_at, expires_at, status, tombstone) VALUES
			(3, 'a3', 'three', 1, 0, 0, 'stale', 0),
			(7, 'a7', 'seven', 1, 0, 0, 'stale', 1)`,
	} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db, err := sqlite.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatalf("open a version 5 database: %v", err)
	}
	defer db.Close()
	if _, err := raw.Exec(`INSERT INTO agents (id, name, seq, issued_at, expires_at, status) VALUES ('a8', 'eight', 1, 0, 0, 'online')`); err != nil {
		t.Fatal(err)
	}
	docs, err := db.ListingChanges(t.Context(), 0, nil, 10)
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
