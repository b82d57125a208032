package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentsite/agentsite/agent"
)

// SetHealth implements store.Catalogue: one statement for every entry of a
// heartbeat, the arrays unnested side by side. The host condition is in
// the join, so a claim about another host's agent (or an unknown id)
// matches no row; a row whose health is unchanged is not written.
func (db *DB) SetHealth(ctx context.Context, hostPeerID string, health map[string]agent.Health) (int, error) {
	return setHealth(ctx, db.q, hostPeerID, health)
}

// setHealth is SetHealth on q (the pool, or a batch: HeardAll).
func setHealth(ctx context.Context, q querier, hostPeerID string, health map[string]agent.Health) (int, error) {
	if len(health) == 0 || unmatchable(hostPeerID) {
		return 0, nil
	}
	var (
		ids, states     []string
		latencies, uses []int32
		rates           []float64
		lastOKs, checks []*time.Time
	)
	for id, h := range health {
		if unmatchable(id) || unmatchable(h.State) {
			continue
		}
		ids, states = append(ids, id), append(states, h.State)
		latencies = append(latencies, int32(min(max(h.LatencyMS, 0), 1<<31-1)))
		rates = append(rates, h.SuccessRate)
		uses = append(uses, int32(min(max(h.Uses7d, 0), 1<<31-1)))
		lastOKs, checks = append(lastOKs, nullTime(h.LastOKAt)), append(checks, nullTime(h.CheckedAt))
	}
	tag, err := q.Exec(ctx, `-- name: set_health
UPDATE agents a SET health_state = h.state, health_latency_ms = h.latency,
	health_success_rate = h.rate, health_last_ok_at = h.last_ok, health_checked_at = h.checked,
	health_uses_7d = h.uses
FROM unnest($2::text[], $3::text[], $4::int[], $5::float8[], $6::timestamptz[], $7::timestamptz[], $8::int[])
	AS h (id, state, latency, rate, last_ok, checked, uses)
WHERE a.id = h.id AND a.host_peer_id = $1
	AND (a.health_state, a.health_latency_ms, a.health_success_rate, a.health_last_ok_at, a.health_checked_at, a.health_uses_7d)
		IS DISTINCT FROM (h.state, h.latency, h.rate, h.last_ok, h.checked, h.uses)`,
		hostPeerID, ids, states, latencies, rates, lastOKs, checks, uses)
	if err != nil {
		return 0, dbErr("set health of agents of "+hostPeerID, err)
	}
	return int(tag.RowsAffected()), nil
}

// LocalNames implements store.Network: a probe of the primary keys per
// id, the names only (agent_records holds them).
func (db *DB) LocalNames(ctx context.Context, ids []string) (map[string]string, error) {
	out := make(map[string]string, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := db.q.Query(ctx, `-- name: local_names
SELECT a.id, r.name FROM agents a JOIN agent_records r ON r.id = a.id
WHERE a.id = ANY($1) AND a.local AND NOT a.tombstone`, ids)
	if err != nil {
		return nil, dbErr("names of local agents", err)
	}
	var id, name string
	if _, err := pgx.ForEachRow(rows, []any{&id, &name}, func() error {
		out[id] = name
		return nil
	}); err != nil {
		return nil, dbErr("names of local agents", err)
	}
	return out, nil
}
