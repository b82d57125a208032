package sqlite

import (
	"context"
	"database/sql"

	"github.com/agentsite/agentsite/store"
)

// UpsertNode implements store.Nodes.
func (db *DB) UpsertNode(ctx context.Context, n store.Node) error {
	addrs, err := jsonOrNull(n.Addrs)
	if err != nil {
		return dbErr("upsert node "+n.PeerID, err)
	}
	_, err = db.w.ExecContext(ctx, `-- name: upsert_node
INSERT INTO nodes (peer_id, addrs, version, agents_hosted, load, last_heartbeat, status)
VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (peer_id) DO UPDATE SET
	addrs = excluded.addrs, version = excluded.version,
	agents_hosted = excluded.agents_hosted, load = excluded.load,
	last_heartbeat = excluded.last_heartbeat, status = excluded.status`,
		n.PeerID, addrs, n.Version, n.AgentsHosted, n.Load, nanos(n.LastHeartbeat), n.Status)
	return dbErr("upsert node "+n.PeerID, err)
}

// ListNodes implements store.Nodes: most recently heard from first.
func (db *DB) ListNodes(ctx context.Context) ([]store.Node, error) {
	rows, err := db.r.QueryContext(ctx, `-- name: list_nodes
SELECT peer_id, addrs, version, agents_hosted, load, last_heartbeat, status
FROM nodes ORDER BY last_heartbeat DESC, peer_id`)
	if err != nil {
		return nil, dbErr("list nodes", err)
	}
	defer rows.Close()
	out := []store.Node{}
	for rows.Next() {
		var (
			n     store.Node
			addrs sql.NullString
			hb    sql.NullInt64
		)
		if err := rows.Scan(&n.PeerID, &addrs, &n.Version, &n.AgentsHosted, &n.Load, &hb, &n.Status); err != nil {
			return nil, dbErr("list nodes", err)
		}
		if err := decodeJSON(addrs, &n.Addrs); err != nil {
			return nil, dbErr("list nodes: decode addrs of "+n.PeerID, err)
		}
		n.LastHeartbeat = fromNanos(hb)
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr("list nodes", err)
	}
	return out, nil
}
