package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/agentsite/agentsite/store"
)

// UpsertNode implements store.Nodes.
func (db *DB) UpsertNode(ctx context.Context, n store.Node) error {
	return upsertNode(ctx, db.w, n)
}

// upsertNode is UpsertNode on w (the pool, or a batch: HeardAll).
func upsertNode(ctx context.Context, w execer, n store.Node) error {
	addrs, err := jsonOrNull(n.Addrs)
	if err != nil {
		return dbErr("upsert node "+n.PeerID, err)
	}
	first := n.FirstHeard
	if first.IsZero() {
		first = n.LastHeartbeat
	}
	var firstNanos int64 // 0: never, for a row without a heartbeat
	if !first.IsZero() {
		firstNanos = first.UnixNano()
	}
	// A node heard again after this node called it offline starts its
	// evidence again: read before the row below changes its status.
	if n.Status == store.StatusOnline {
		if _, err := w.ExecContext(ctx, `-- name: node_evidence_restart
UPDATE node_evidence SET first_heard = ?2
WHERE peer_id = ?1 AND EXISTS (SELECT 1 FROM nodes WHERE peer_id = ?1 AND status = 'offline')`, n.PeerID, firstNanos); err != nil {
			return dbErr("restart the evidence of node "+n.PeerID, err)
		}
	}
	_, err = w.ExecContext(ctx, `-- name: upsert_node
INSERT INTO nodes (peer_id, addrs, version, agents_hosted, load, last_heartbeat, status)
VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (peer_id) DO UPDATE SET
	addrs = excluded.addrs, version = excluded.version,
	agents_hosted = excluded.agents_hosted, load = excluded.load,
	last_heartbeat = excluded.last_heartbeat, status = excluded.status`,
		n.PeerID, addrs, n.Version, n.AgentsHosted, n.Load, nanos(n.LastHeartbeat), n.Status)
	if err != nil {
		return dbErr("upsert node "+n.PeerID, err)
	}
	if _, err := w.ExecContext(ctx, `-- name: node_evidence
INSERT INTO node_evidence (peer_id, first_heard) VALUES (?, ?) ON CONFLICT (peer_id) DO NOTHING`, n.PeerID, firstNanos); err != nil {
		return dbErr("record the evidence of node "+n.PeerID, err)
	}
	// The name has a table of its own (migration 0011): a row only for a
	// named node, written only when the name changes.
	if n.Name == "" {
		_, err = w.ExecContext(ctx, `-- name: unname_node
DELETE FROM node_names WHERE peer_id = ?`, n.PeerID)
	} else {
		_, err = w.ExecContext(ctx, `-- name: name_node
INSERT INTO node_names (peer_id, name) VALUES (?, ?)
ON CONFLICT (peer_id) DO UPDATE SET name = excluded.name WHERE node_names.name IS NOT excluded.name`, n.PeerID, n.Name)
	}
	return dbErr("name node "+n.PeerID, err)
}

const (
	nodeColumns = `peer_id, addrs, version, agents_hosted, load, last_heartbeat, status,
	coalesce((SELECT nn.name FROM node_names nn WHERE nn.peer_id = nodes.peer_id), ''),
	(SELECT e.first_heard FROM node_evidence e WHERE e.peer_id = nodes.peer_id)`
	listNodesSQL = `-- name: list_nodes
SELECT ` + nodeColumns + ` FROM nodes WHERE peer_id > ? ORDER BY peer_id LIMIT ?`
	listNodesBeforeSQL = `-- name: list_nodes_before
SELECT ` + nodeColumns + ` FROM nodes WHERE peer_id < ? ORDER BY peer_id DESC LIMIT ?`
)

// ListNodes implements store.Nodes: a walk of the primary key (peer IDs
// are TEXT in the BINARY collation, byte order) from the cursor, one row
// more than the page to know whether another follows, and one probe for a
// row on the other side.
func (db *DB) ListNodes(ctx context.Context, q store.NodeQuery) (store.NodePage, error) {
	limit := store.NormalizeLimit(q.Limit)
	backward := q.After == "" && q.Before != ""
	var (
		rows rowSet
		err  error
	)
	if backward {
		rows, err = db.r.QueryContext(ctx, listNodesBeforeSQL, q.Before, limit+1)
	} else {
		rows, err = db.r.QueryContext(ctx, listNodesSQL, q.After, limit+1)
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
SELECT EXISTS (SELECT 1 FROM nodes WHERE peer_id > ?)`, last); err != nil {
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
SELECT EXISTS (SELECT 1 FROM nodes WHERE peer_id < ?)`, nodes[0].PeerID); err != nil {
			return store.NodePage{}, err
		} else if ok {
			page.Prev = nodes[0].PeerID
		}
	}
	return page, nil
}

func (db *DB) nodeExists(ctx context.Context, query, peerID string) (bool, error) {
	var ok bool
	if err := db.r.QueryRowContext(ctx, query, peerID).Scan(&ok); err != nil {
		return false, dbErr("list nodes", err)
	}
	return ok, nil
}

// GetNodes implements store.Nodes: one primary key probe per id.
func (db *DB) GetNodes(ctx context.Context, peerIDs []string) ([]store.Node, error) {
	if len(peerIDs) == 0 {
		return nil, nil
	}
	list, err := json.Marshal(peerIDs)
	if err != nil {
		return nil, fmt.Errorf("encode peer ids: %w", err)
	}
	rows, err := db.r.QueryContext(ctx, `-- name: get_nodes
SELECT `+nodeColumns+` FROM nodes WHERE peer_id IN (SELECT value FROM json_each(?))`, string(list))
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
func scanNodes(rows rowSet, op string) ([]store.Node, error) {
	defer rows.Close()
	out := []store.Node{}
	for rows.Next() {
		var (
			n     store.Node
			addrs sql.NullString
			hb    sql.NullInt64
			first sql.NullInt64
		)
		if err := rows.Scan(&n.PeerID, &addrs, &n.Version, &n.AgentsHosted, &n.Load, &hb, &n.Status, &n.Name, &first); err != nil {
			return nil, dbErr(op, err)
		}
		if err := decodeJSON(addrs, &n.Addrs); err != nil {
			return nil, dbErr(op+": decode addrs of "+n.PeerID, err)
		}
		n.LastHeartbeat = fromNanos(hb)
		if n.FirstHeard = fromNanos(first); !first.Valid || first.Int64 == 0 {
			n.FirstHeard = n.LastHeartbeat
		}
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr(op, err)
	}
	return out, nil
}

// TouchNodes implements store.Nodes: one statement for every node, passed
// as one JSON array of rows; a time older than the stored one is kept out
// (a lazy flush never moves a heartbeat back).
func (db *DB) TouchNodes(ctx context.Context, seen map[string]time.Time) error {
	if len(seen) == 0 {
		return nil
	}
	rows := make([][]any, 0, len(seen))
	for id, t := range seen {
		rows = append(rows, []any{id, nanos(t)})
	}
	b, err := json.Marshal(rows)
	if err != nil {
		return fmt.Errorf("sqlite: touch nodes: %w", err)
	}
	_, err = db.w.ExecContext(ctx, `-- name: touch_nodes
UPDATE nodes SET last_heartbeat = s.t
FROM (SELECT value ->> 0 AS id, value ->> 1 AS t FROM json_each(?)) AS s
WHERE nodes.peer_id = s.id AND (nodes.last_heartbeat IS NULL OR nodes.last_heartbeat < s.t)`, string(b))
	return dbErr("touch nodes", err)
}

// SharedNodeNames implements store.Nodes: per name, a walk of node_names_name
// that stops at the second row.
func (db *DB) SharedNodeNames(ctx context.Context, names []string) (map[string]bool, error) {
	out := map[string]bool{}
	if len(names) == 0 {
		return out, nil
	}
	list, err := json.Marshal(names)
	if err != nil {
		return nil, fmt.Errorf("encode node names: %w", err)
	}
	rows, err := db.r.QueryContext(ctx, `-- name: shared_node_names
SELECT n.value FROM json_each(?) AS n
WHERE n.value <> '' AND (SELECT count(*) FROM (SELECT 1 FROM node_names WHERE name = n.value LIMIT 2)) > 1`, string(list))
	if err != nil {
		return nil, dbErr("shared node names", err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, dbErr("shared node names", err)
		}
		out[name] = true
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr("shared node names", err)
	}
	return out, nil
}
