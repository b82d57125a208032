package postgres

import (
	"context"
	"time"

	"github.com/agentsite/agentsite/store"
)

// UpsertNode implements store.Nodes.
func (db *DB) UpsertNode(ctx context.Context, n store.Node) error {
	_, err := db.q.Exec(ctx, `-- name: upsert_node
INSERT INTO nodes (peer_id, addrs, version, agents_hosted, load, last_heartbeat, status)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (peer_id) DO UPDATE SET
	addrs = excluded.addrs, version = excluded.version,
	agents_hosted = excluded.agents_hosted, load = excluded.load,
	last_heartbeat = excluded.last_heartbeat, status = excluded.status`,
		n.PeerID, n.Addrs, n.Version, n.AgentsHosted, n.Load, n.LastHeartbeat, n.Status)
	return dbErr("upsert node "+n.PeerID, err)
}

// ListNodes implements store.Nodes: most recently heard first.
func (db *DB) ListNodes(ctx context.Context) ([]store.Node, error) {
	rows, err := db.q.Query(ctx, `-- name: list_nodes
SELECT peer_id, addrs, version, agents_hosted, load, last_heartbeat, status
FROM nodes ORDER BY last_heartbeat DESC, peer_id`)
	if err != nil {
		return nil, dbErr("list nodes", err)
	}
	defer rows.Close()
	out := []store.Node{}
	for rows.Next() {
		var (
			n  store.Node
			hb time.Time
		)
		if err := rows.Scan(&n.PeerID, &n.Addrs, &n.Version, &n.AgentsHosted, &n.Load, &hb, &n.Status); err != nil {
			return nil, dbErr("list nodes", err)
		}
		n.LastHeartbeat = hb.UTC()
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr("list nodes", err)
	}
	return out, nil
}
