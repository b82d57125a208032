package postgres

import (
	"context"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentsite/agentsite/store"
)

// UpsertNode implements store.Nodes.
func (db *DB) UpsertNode(ctx context.Context, n store.Node) error {
	return upsertNode(ctx, db.q, n)
}

// upsertNode is UpsertNode on q (the pool, or a batch: HeardAll).
func upsertNode(ctx context.Context, q querier, n store.Node) error {
	var first any = n.FirstHeard
	if n.FirstHeard.IsZero() {
		first = n.LastHeartbeat
		if n.LastHeartbeat.IsZero() {
			first = nil
		}
	}
	// A node heard again after this node called it offline starts its
	// evidence again (FirstHeard); otherwise the stored one stays.
	_, err := q.Exec(ctx, `-- name: upsert_node
INSERT INTO nodes (peer_id, addrs, version, agents_hosted, load, last_heartbeat, status, name, first_heard)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (peer_id) DO UPDATE SET
	addrs = excluded.addrs, version = excluded.version, name = excluded.name,
	agents_hosted = excluded.agents_hosted, load = excluded.load,
	last_heartbeat = excluded.last_heartbeat, status = excluded.status,
	first_heard = CASE WHEN nodes.first_heard IS NULL OR nodes.status = 'offline' AND excluded.status = 'online'
		THEN excluded.first_heard ELSE nodes.first_heard END`,
		n.PeerID, n.Addrs, n.Version, n.AgentsHosted, n.Load, n.LastHeartbeat, n.Status, n.Name, first)
	return dbErr("upsert node "+n.PeerID, err)
}

const nodeColumns = `peer_id, addrs, version, agents_hosted, load, last_heartbeat, status, name, first_heard`

// ListNodes implements store.Nodes: a walk of nodes_peer_c (peer IDs in
// byte order, as SQLite compares them, whatever the database's collation)
// from the cursor, one row more than the page to know whether another
// follows, and one probe for a row on the other side.
func (db *DB) ListNodes(ctx context.Context, q store.NodeQuery) (store.NodePage, error) {
	limit := store.NormalizeLimit(q.Limit)
	backward := q.After == "" && q.Before != ""
	var (
		rows pgx.Rows
		err  error
	)
	if backward {
		rows, err = db.q.Query(ctx, `-- name: list_nodes_before
SELECT `+nodeColumns+` FROM nodes WHERE peer_id COLLATE "C" < $1 ORDER BY peer_id COLLATE "C" DESC LIMIT $2`, q.Before, limit+1)
	} else {
		rows, err = db.q.Query(ctx, `-- name: list_nodes
SELECT `+nodeColumns+` FROM nodes WHERE peer_id COLLATE "C" > $1 ORDER BY peer_id COLLATE "C" LIMIT $2`, q.After, limit+1)
	}
	if err != nil {
		return store.NodePage{}, dbErr("list nodes", err)
	}
	nodes, err := scanNodes(rows, "list nodes")
	if err != nil {
		return store.NodePage{}, err
	}
	more := len(nodes) > limit
	if more {
		nodes = nodes[:limit]
	}
	page := store.NodePage{Nodes: nodes}
	if len(nodes) == 0 {
		return page, nil
	}
	if backward {
		slices.Reverse(nodes)
		if more {
			page.Prev = nodes[0].PeerID
		}
		last := nodes[len(nodes)-1].PeerID
		if ok, err := db.nodeExists(ctx, `-- name: node_after
SELECT EXISTS (SELECT 1 FROM nodes WHERE peer_id COLLATE "C" > $1)`, last); err != nil {
			return store.NodePage{}, err
		} else if ok {
			page.Next = last
		}
		return page, nil
	}
	if more {
		page.Next = nodes[len(nodes)-1].PeerID
	}
	if q.After != "" {
		if ok, err := db.nodeExists(ctx, `-- name: node_before
SELECT EXISTS (SELECT 1 FROM nodes WHERE peer_id COLLATE "C" < $1)`, nodes[0].PeerID); err != nil {
			return store.NodePage{}, err
		} else if ok {
			page.Prev = nodes[0].PeerID
		}
	}
	return page, nil
}

func (db *DB) nodeExists(ctx context.Context, query, peerID string) (bool, error) {
	var ok bool
	if err := db.q.QueryRow(ctx, query, peerID).Scan(&ok); err != nil {
		return false, dbErr("list nodes", err)
	}
	return ok, nil
}

// GetNodes implements store.Nodes: one primary key probe per id.
func (db *DB) GetNodes(ctx context.Context, peerIDs []string) ([]store.Node, error) {
	if len(peerIDs) == 0 {
		return nil, nil
	}
	rows, err := db.q.Query(ctx, `-- name: get_nodes
SELECT `+nodeColumns+` FROM nodes WHERE peer_id = ANY($1)`, peerIDs)
	if err != nil {
		return nil, dbErr("get nodes", err)
	}
	return scanNodes(rows, "get nodes")
}

// CountNodes implements store.Nodes.
func (db *DB) CountNodes(ctx context.Context) (map[string]int, error) {
	return db.countBy(ctx, "count nodes", `-- name: count_nodes
SELECT status, count(*) FROM nodes GROUP BY status`)
}

// scanNodes reads rows of nodeColumns and closes them; op names the read
// in errors.
func scanNodes(rows pgx.Rows, op string) ([]store.Node, error) {
	defer rows.Close()
	out := []store.Node{}
	for rows.Next() {
		var (
			n     store.Node
			hb    time.Time
			first *time.Time
		)
		if err := rows.Scan(&n.PeerID, &n.Addrs, &n.Version, &n.AgentsHosted, &n.Load, &hb, &n.Status, &n.Name, &first); err != nil {
			return nil, dbErr(op, err)
		}
		n.LastHeartbeat = hb.UTC()
		if n.FirstHeard = n.LastHeartbeat; first != nil {
			n.FirstHeard = first.UTC()
		}
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr(op, err)
	}
	return out, nil
}

// TouchNodes implements store.Nodes: one statement for every node, the
// arrays unnested side by side; a time older than the stored one is kept
// out (a lazy flush never moves a heartbeat back).
func (db *DB) TouchNodes(ctx context.Context, seen map[string]time.Time) error {
	if len(seen) == 0 {
		return nil
	}
	ids := make([]string, 0, len(seen))
	times := make([]time.Time, 0, len(seen))
	for id, t := range seen {
		ids, times = append(ids, id), append(times, t)
	}
	_, err := db.q.Exec(ctx, `-- name: touch_nodes
UPDATE nodes n SET last_heartbeat = s.t
FROM unnest($1::text[], $2::timestamptz[]) AS s (id, t)
WHERE n.peer_id = s.id AND (n.last_heartbeat IS NULL OR n.last_heartbeat < s.t)`, ids, times)
	return dbErr("touch nodes", err)
}

// SharedNodeNames implements store.Nodes: per name, a walk of nodes_name
// that stops at the second row.
func (db *DB) SharedNodeNames(ctx context.Context, names []string) (map[string]bool, error) {
	out := map[string]bool{}
	if len(names) == 0 {
		return out, nil
	}
	rows, err := db.q.Query(ctx, `-- name: shared_node_names
SELECT n FROM unnest($1::text[]) AS n
WHERE n <> '' AND (SELECT count(*) FROM (SELECT 1 FROM nodes WHERE name = n LIMIT 2) AS two) > 1`, names)
	if err != nil {
		return nil, dbErr("shared node names", err)
	}
	var name string
	if _, err := pgx.ForEachRow(rows, []any{&name}, func() error {
		out[name] = true
		return nil
	}); err != nil {
		return nil, dbErr("shared node names", err)
	}
	return out, nil
}
