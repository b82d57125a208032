package sqlite

import (
	"context"
	"time"

	"github.com/agentsite/agentsite/store"
)

var _ store.Evictor = (*DB)(nil)

// countListingsSQL counts every row of agents (from its smallest index).
const countListingsSQL = `-- name: count_listings
SELECT count(*) FROM agents`

// evictListingsSQL deletes at most ?1 listings in the eviction order
// (store.Evictor): class 1, the stale, offline or tombstoned listings of
// hosts with no node row, among the first ?2 of each index; class 2,
// offline listings and tombstones; class 3, stale listings, with ?4 (unix
// nanoseconds, 0: none) only those of hosts first heard at ?4 or later or
// offline (store.Evictor.EvictListingsFor), among the first ?3 of the
// index; each class in first-seen order. Each half walks a partial index that holds only what
// may be evicted (migration 0010; never local, never online and live),
// with the host in it for the probe of nodes by primary key. The delete
// triggers keep the counts, the text index and both feeds.
const evictListingsSQL = `-- name: evict_listings
DELETE FROM agents WHERE pos IN (
	SELECT pos FROM (
		SELECT s.pos, 1 AS class FROM (
			SELECT pos, host_peer_id FROM agents INDEXED BY agents_evict_stale
			WHERE status = 'stale' AND local = 0 ORDER BY pos LIMIT ?2) AS s
		WHERE NOT EXISTS (SELECT 1 FROM nodes n WHERE n.peer_id = s.host_peer_id)
		UNION ALL
		SELECT g.pos, 1 FROM (
			SELECT pos, host_peer_id FROM agents INDEXED BY agents_evict_gone
			WHERE local = 0 AND (status = 'offline' OR tombstone = 1) ORDER BY pos LIMIT ?2) AS g
		WHERE NOT EXISTS (SELECT 1 FROM nodes n WHERE n.peer_id = g.host_peer_id)
		UNION ALL
		SELECT * FROM (SELECT pos, 2 FROM agents INDEXED BY agents_evict_gone
			WHERE local = 0 AND (status = 'offline' OR tombstone = 1) ORDER BY pos LIMIT ?1)
		UNION ALL
		SELECT st.pos, 3 FROM (
			SELECT pos, host_peer_id FROM agents INDEXED BY agents_evict_stale
			WHERE status = 'stale' AND local = 0 ORDER BY pos LIMIT ?3) AS st
		WHERE ?4 = 0 OR NOT EXISTS (
			SELECT 1 FROM nodes n JOIN node_evidence e ON e.peer_id = n.peer_id
			WHERE n.peer_id = st.host_peer_id AND n.status <> 'offline' AND e.first_heard < ?4)
	)
	GROUP BY pos ORDER BY min(class), pos LIMIT ?1)
AND local = 0 AND (status <> 'online' OR tombstone = 1)`

// pruneGoneSQL drops at most 1,000 rows of agent_changes whose listing
// went more than ten minutes ago (a search index in any process has read
// them by then), never the one with the largest number, which the next
// number is counted from.
const pruneGoneSQL = `-- name: prune_gone_changes
DELETE FROM agent_changes WHERE pos IN (
	SELECT pos FROM agent_changes WHERE gone_at < unixepoch() - 600 LIMIT 1000)
AND change_seq < (SELECT max(change_seq) FROM agent_changes)`

// CountListings implements store.Evictor.
func (db *DB) CountListings(ctx context.Context) (int, error) {
	var n int
	err := db.r.QueryRowContext(ctx, countListingsSQL).Scan(&n)
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
	err := db.inTx(ctx, func(ctx context.Context, tx execer) error {
		var bound int64
		scan := n // the stale listings walked: all may go
		if !firstHeard.IsZero() {
			bound, scan = max(firstHeard.UnixNano(), 1), evictScan(n)
		}
		res, err := tx.ExecContext(ctx, evictListingsSQL, n, evictScan(n), scan, bound)
		if err != nil {
			return dbErr("evict listings", err)
		}
		if evicted, err = rowsAffected(res, "evict listings"); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, pruneGoneSQL)
		return dbErr("prune the changes of evicted listings", err)
	}, evictListingsSQL, pruneGoneSQL)
	return evicted, err
}

// evictScan is how many candidates of each index an eviction of n
// looks at for listings of hosts never heard: a bound on the walk past
// stale listings of hosts heard, so a catalogue of them costs no scan.
func evictScan(n int) int { return max(8*n, 1024) }
