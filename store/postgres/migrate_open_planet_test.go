package postgres_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/agentsite/agentsite/migrations"
	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/store/postgres"
	"github.com/agentsite/agentsite/store/postgres/pgtest"
)

// TestMigrationDropsUnheardNodes: migration 7 drops the node rows an older
// Sink made for hosts never heard (no addresses, version, agents or load)
// and turns those hosts' online listings stale; a heard node, its
// listings and this node's own are left as they were.
func TestMigrationDropsUnheardNodes(t *testing.T) {
	url := pgtest.NewDatabase(t)
	down, err := migrations.Postgres.ReadFile("postgres/0007_open_planet.down.sql")
	if err != nil {
		t.Fatal(err)
	}
	exec(t, url, string(down))
	exec(t, url, `UPDATE schema_migrations SET version = 6`)
	exec(t, url, `INSERT INTO nodes (peer_id, addrs, version, agents_hosted, load, last_heartbeat, status) VALUES
		('noted', NULL, '', 0, 0, now(), 'online'),
		('heard', '{/ip4/10.0.0.1/tcp/4001}', '0.1.0', 1, 0.5, now(), 'online')`)
	for _, a := range []struct{ id, host, local string }{{"of-noted", "noted", "false"}, {"of-heard", "heard", "false"}, {"of-self", "self", "true"}} {
		exec(t, url, `INSERT INTO agents (id, seq, status, local, host_peer_id, expires_at, last_seen, updated_at, search)
			VALUES ('`+a.id+`', 1, 'online', `+a.local+`, '`+a.host+`', now(), now(), now(), ''::tsvector);
			INSERT INTO agent_records (id, name, issued_at) VALUES ('`+a.id+`', '`+a.id+`', now())`)
	}

	db, err := postgres.Open(context.Background(), url, slog.New(slog.DiscardHandler))
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
