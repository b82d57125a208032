package sqlite_test

import (
	"database/sql"
	"testing"

	"github.com/agentsite/agentsite/migrations"
	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/store/sqlite"
)

// TestMigrationDropsUnheardNodes: migration 7 drops the node rows an older
// Sink made for hosts never heard (no addresses, version, agents or load)
// and turns those hosts' online listings stale; a heard node, its
// listings and this node's own are left as they were.
func TestMigrationDropsUnheardNodes(t *testing.T) {
	path := openMigrated(t)
	down, err := migrations.SQLite.ReadFile("sqlite/0007_open_planet.down.sql")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		string(down),
		`UPDATE schema_migrations SET version = 6, dirty = 0`,
		`INSERT INTO nodes (peer_id, addrs, version, agents_hosted, load, last_heartbeat, status) VALUES
			('noted', NULL, '', 0, 0, 1, 'online'),
			('heard', '["/ip4/10.0.0.1/tcp/4001"]', '0.1.0', 1, 0.5, 1, 'online')`,
		`INSERT INTO agents (id, name, host_peer_id, seq, issued_at, expires_at, status, local) VALUES
			('of-noted', 'a', 'noted', 1, 0, 0, 'online', 0),
			('of-heard', 'b', 'heard', 1, 0, 0, 'online', 0),
			('of-self', 'c', 'self', 1, 0, 0, 'online', 1)`,
	} {
		if _, err := raw.Exec(q); err != nil {
			raw.Close()
			t.Fatalf("%s: %v", q, err)
		}
	}
	raw.Close()

	db, err := sqlite.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatalf("open a version 6 database: %v", err)
	}
	defer db.Close()
	nodes, err := db.GetNodes(t.Context(), []string{"noted", "heard"})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 1 || nodes[0].PeerID != "heard" {
		t.Errorf("node rows after migrating: %+v, want only heard's", nodes)
	}
	for id, want := range map[string]string{"of-noted": store.StatusStale, "of-heard": store.StatusOnline, "of-self": store.StatusOnline} {
		l, err := db.GetAgent(t.Context(), id)
		if err != nil {
			t.Fatalf("GetAgent(%s): %v", id, err)
		}
		if l.Status != want {
			t.Errorf("%s after migrating: %q, want %q", id, l.Status, want)
		}
	}
}
