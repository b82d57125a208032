package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentsite/agentsite/store"
)

var _ store.Evictor = (*DB)(nil)

// evictListingsSQL deletes at most $1 listings in the eviction order
// (store.Evictor): class 1, the stale, offline or tombstoned listings of
// hosts with no node row, among the first $2 of each index; class 2,
// offline listings and tombstones; class 3, stale listings, with $4 (NULL:
// none) only those of hosts first heard at $4 or later or offline
// (store.Evictor.EvictListingsFor), among the first $3; each class in
// first-seen order. The walks are of agents_unheard (0007: stale, not
// local) and agents_evict_gone (0010: offline or tombstoned, not local),
// ordered by pos, stopped at their limits. The delete checks again that a
// row may go (a heartbeat may have turned it online meanwhile). agent_records
// and agent_tags follow by their cascades, agent_changes by its trigger.
const evictListingsSQL = `-- name: evict_listings
WITH unheard AS (
	SELECT c.pos FROM (
		(SELECT pos, host_peer_id FROM agents WHERE status = 'stale' AND NOT local ORDER BY pos LIMIT $2)
		UNION ALL
		(SELECT pos, host_peer_id FROM agents WHERE NOT local AND (status = 'offline' OR tombstone) ORDER BY pos LIMIT $2)
	) c WHERE NOT EXISTS (SELECT 1 FROM nodes n WHERE n.peer_id = c.host_peer_id)
), gone AS (
	SELECT pos FROM agents WHERE NOT local AND (status = 'offline' OR tombstone) ORDER BY pos LIMIT $1
), stale AS (
	SELECT c.pos FROM (
		SELECT pos, host_peer_id FROM agents WHERE status = 'stale' AND NOT local ORDER BY pos LIMIT $3
	) c WHERE $4::timestamptz IS NULL OR NOT EXISTS (
		SELECT 1 FROM nodes n WHERE n.peer_id = c.host_peer_id AND n.status <> 'offline' AND n.first_heard < $4)
), picked AS (
	SELECT pos FROM (
		SELECT pos, 1 AS class FROM unheard UNION ALL SELECT pos, 2 FROM gone UNION ALL SELECT pos, 3 FROM stale
	) p GROUP BY pos ORDER BY min(class), pos LIMIT $1
)
DELETE FROM agents a USING picked
WHERE a.pos = picked.pos AND NOT a.local AND (a.status <> 'online' OR a.tombstone)`

// pruneGoneSQL drops at most 1,000 rows of agent_changes whose listing
// went more than ten minutes ago: a search index in any process has read
// them by then.
const pruneGoneSQL = `-- name: prune_gone_changes
DELETE FROM agent_changes WHERE pos IN (
	SELECT pos FROM agent_changes WHERE gone_at < now() - interval '10 minutes' LIMIT 1000)`

// CountListings implements store.Evictor (an index-only count of
// agents_pos).
func (db *DB) CountListings(ctx context.Context) (int, error) {
	var n int
	err := db.q.QueryRow(ctx, `-- name: count_listings
SELECT count(*) FROM agents`).Scan(&n)
	return n, dbErr("count listings", err)
}

// EvictListings implements store.Evictor: EvictListingsFor with no
// evidence to weigh.
func (db *DB) EvictListings(ctx context.Context, n int) (int, error) {
	return db.EvictListingsFor(ctx, n, time.Time{})
}

// EvictListingsFor implements store.Evictor: one transaction, the delete
// then the prune.
func (db *DB) EvictListingsFor(ctx context.Context, n int, firstHeard time.Time) (int, error) {
	n = min(n, store.MaxEvictBatch)
	if n <= 0 {
		return 0, nil
	}
	var evicted int
	err := db.InTransaction(ctx, func(ctx context.Context, tx pgx.Tx) error {
		var bound *time.Time
		scan := n // the stale listings walked: all may go
		if !firstHeard.IsZero() {
			bound, scan = &firstHeard, evictScan(n)
		}
		tag, err := tx.Exec(ctx, evictListingsSQL, n, evictScan(n), scan, bound)
		if err != nil {
			return dbErr("evict listings", err)
		}
		evicted = int(tag.RowsAffected())
		_, err = tx.Exec(ctx, pruneGoneSQL)
		return dbErr("prune the changes of evicted listings", err)
	})
	return evicted, err
}

// evictScan is how many candidates of each index an eviction of n
// looks at for listings of hosts never heard: a bound on the walk past
// stale listings of hosts heard, so a catalogue of them costs no scan.
func evictScan(n int) int { return max(8*n, 1024) }
