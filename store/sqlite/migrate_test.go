package sqlite_test

import (
	"database/sql"
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
	for _, f := range []string{"sqlite/0004_public_json.down.sql", "sqlite/0003_agent_health.down.sql", "sqlite/0002_conversation_agent_owner.down.sql"} {
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
		downs[0], downs[1], downs[2],
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
