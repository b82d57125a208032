package sqlite

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentsite/agentsite/agent"
)

// SetHealth implements store.Catalogue: one statement for every entry of a
// heartbeat, the entries passed as one JSON array of rows. The host
// condition is in the WHERE, so a claim about another host's agent (or an
// unknown id) matches no row; a row whose health is unchanged is not
// written. Plan (pinned by plan_test.go): json_each drives, each entry
// finds its agent by the unique index on id. The unary + keeps SQLite off
// agents_host, which it otherwise picks: a walk of all the host's agents,
// each scanning every entry.
func (db *DB) SetHealth(ctx context.Context, hostPeerID string, health map[string]agent.Health) (int, error) {
	return setHealth(ctx, db.w, hostPeerID, health)
}

// setHealth is SetHealth on w (the pool, or a batch: HeardAll).
func setHealth(ctx context.Context, w execer, hostPeerID string, health map[string]agent.Health) (int, error) {
	if len(health) == 0 {
		return 0, nil
	}
	rows := make([][]any, 0, len(health))
	used := false
	for id, h := range health {
		rows = append(rows, []any{id, h.State, h.LatencyMS, h.SuccessRate, nanos(h.LastOKAt), nanos(h.CheckedAt), max(h.Uses7d, 0)})
		used = used || h.Uses7d > 0
	}
	entries, err := json.Marshal(rows)
	if err != nil {
		return 0, fmt.Errorf("sqlite: set health of agents of %s: %w", hostPeerID, err)
	}
	// The week's uses (agent_uses, migration 0014) are written beside the
	// health: a row only for a used agent, so a host that counts none
	// writes none. The count is of the agents whose health or uses changed.
	stmts := []string{setHealthSQL, dropUsesSQL}
	if used {
		stmts = append(stmts, setUsesSQL)
	}
	changed := map[int64]bool{}
	for _, q := range stmts {
		if err := func() error {
			rows, err := w.QueryContext(ctx, q, hostPeerID, string(entries))
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var pos int64
				if err := rows.Scan(&pos); err != nil {
					return err
				}
				changed[pos] = true
			}
			return rows.Err()
		}(); err != nil {
			return 0, dbErr("set health of agents of "+hostPeerID, err)
		}
	}
	return len(changed), nil
}

const setUsesSQL = `-- name: set_uses
INSERT INTO agent_uses (agent_pos, uses_7d)
SELECT a.pos, h.value ->> 6 FROM json_each(?2) AS h JOIN agents a ON a.id = h.value ->> 0
WHERE +a.host_peer_id = ?1 AND h.value ->> 6 > 0
ON CONFLICT (agent_pos) DO UPDATE SET uses_7d = excluded.uses_7d WHERE uses_7d <> excluded.uses_7d
RETURNING agent_pos`

const dropUsesSQL = `-- name: drop_uses
DELETE FROM agent_uses WHERE agent_pos IN (
	SELECT a.pos FROM json_each(?2) AS h JOIN agents a ON a.id = h.value ->> 0
	WHERE +a.host_peer_id = ?1 AND h.value ->> 6 = 0)
RETURNING agent_pos`

const setHealthSQL = `-- name: set_health
UPDATE agents SET health_state = h.state, health_latency_ms = h.latency,
	health_success_rate = h.rate, health_last_ok_at = h.last_ok, health_checked_at = h.checked
FROM (SELECT value ->> 0 AS id, value ->> 1 AS state, value ->> 2 AS latency, value ->> 3 AS rate,
		value ->> 4 AS last_ok, value ->> 5 AS checked
	FROM json_each(?2)) AS h
WHERE agents.id = h.id AND +agents.host_peer_id = ?1
	AND (agents.health_state, agents.health_latency_ms, agents.health_success_rate,
		agents.health_last_ok_at, agents.health_checked_at)
		IS NOT (h.state, h.latency, h.rate, h.last_ok, h.checked)
RETURNING agents.pos`

// LocalNames implements store.Network: a probe of the unique index on id
// per id, the names only.
func (db *DB) LocalNames(ctx context.Context, ids []string) (map[string]string, error) {
	out := make(map[string]string, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	b, err := json.Marshal(ids)
	if err != nil {
		return nil, fmt.Errorf("sqlite: names of local agents: %w", err)
	}
	rows, err := db.r.QueryContext(ctx, `-- name: local_names
SELECT a.id, a.name FROM json_each(?) j JOIN agents a ON a.id = j.value
WHERE a.local = 1 AND a.tombstone = 0`, string(b))
	if err != nil {
		return nil, dbErr("names of local agents", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, name string
		if err := rows.Scan(&id, &name); err != nil {
			return nil, dbErr("names of local agents", err)
		}
		out[id] = name
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr("names of local agents", err)
	}
	return out, nil
}
