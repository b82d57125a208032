package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/agentsite/agentsite/store"
)

// SetHostStatus implements store.Catalogue. The count is of the listings
// matched (every non-offline listing of the host), as in store/postgres.
func (db *DB) SetHostStatus(ctx context.Context, hostPeerID, status string, lastSeen time.Time) (int, error) {
	return setHostStatus(ctx, db.w, hostPeerID, status, lastSeen)
}

// setHostStatus is SetHostStatus on w (the pool, or a batch: HeardAll).
func setHostStatus(ctx context.Context, w execer, hostPeerID, status string, lastSeen time.Time) (int, error) {
	res, err := w.ExecContext(ctx, `-- name: set_host_status
UPDATE agents SET status = ?1,
	last_seen = CASE WHEN ?1 = 'online' THEN ?2 ELSE last_seen END
WHERE host_peer_id = ?3 AND status <> 'offline'`, status, nanos(lastSeen), hostPeerID)
	if err != nil {
		return 0, dbErr("set status of host "+hostPeerID, err)
	}
	return rowsAffected(res, "set status of host "+hostPeerID)
}

// ExpireListings implements store.Catalogue; the partial index agents_expires
// holds only the candidates.
func (db *DB) ExpireListings(ctx context.Context, now time.Time) (int, error) {
	res, err := db.w.ExecContext(ctx,
		`-- name: expire_listings
UPDATE agents SET status = 'offline' WHERE status <> 'offline' AND expires_at <= ?`, nanos(now))
	if err != nil {
		return 0, dbErr("expire listings", err)
	}
	return rowsAffected(res, "expire listings")
}

// expireUnheardSQL is one batch of ExpireUnheard (?1 before, ?2 the
// batch, ?3 this node's peer id): the hosts of the catalogue walked in
// agents_host, one seek each (a loose index scan), those without a node
// row kept but this node (it has none, and its listings are all local:
// reading them through agents_host to find none to expire was a fifth of
// an idle host's CPU at 100k agents, and missed the store deadline under
// load), and their stale listings that are not local, found in
// agents_host too (CROSS JOIN: the hosts are the outer loop), expired.
const expireUnheardSQL = `-- name: expire_unheard
WITH RECURSIVE hosts (h) AS (
	SELECT (SELECT host_peer_id FROM agents WHERE host_peer_id >= '' ORDER BY host_peer_id LIMIT 1)
	UNION ALL
	SELECT (SELECT a.host_peer_id FROM agents a WHERE a.host_peer_id > hosts.h
		ORDER BY a.host_peer_id LIMIT 1)
	FROM hosts WHERE hosts.h IS NOT NULL
), unheard (h) AS (
	SELECT h FROM hosts
	WHERE h IS NOT NULL AND h <> ?3 AND NOT EXISTS (SELECT 1 FROM nodes n WHERE n.peer_id = hosts.h)
)
UPDATE agents SET status = 'offline'
WHERE pos IN (SELECT c.pos FROM unheard u CROSS JOIN agents c
	WHERE c.host_peer_id = u.h AND c.status = 'stale' AND c.local = 0 AND c.last_seen < ?1
	LIMIT ?2)`

// ExpireUnheard implements store.Network: the hosts of the catalogue are
// walked once each, and the stale listings of those never heard (no node
// row; self, this node, is skipped) that were last seen before before are expired, store.ExpireBatch
// listings a statement, each committed on its own: a backlog of a million
// never-heard listings is taken in steps that each end well within the
// store deadline, and what a cut-short sweep expired stays expired.
// Walking the candidate listings instead (agents_unheard, each one's host
// probed) read every stale listing on every sweep when their hosts were
// heard: at 1M stale listings of 50 heard hosts, 3 CPU-s every 10 s, a
// fifth of a core while idle, and RSS up ~55 MB at each sweep.
func (db *DB) ExpireUnheard(ctx context.Context, before time.Time, self string) (int, error) {
	return store.ExpireInBatches(ctx, func(ctx context.Context) (int, error) {
		res, err := db.w.ExecContext(ctx, expireUnheardSQL, nanos(before), store.ExpireBatch, self)
		if err != nil {
			return 0, dbErr("expire unheard listings", err)
		}
		return rowsAffected(res, "expire unheard listings")
	})
}

func rowsAffected(res sql.Result, op string) (int, error) {
	n, err := res.RowsAffected()
	if err != nil {
		return 0, dbErr(op, err)
	}
	return int(n), nil
}
