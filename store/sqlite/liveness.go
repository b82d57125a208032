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

const expireUnheardSQL = `-- name: expire_unheard
UPDATE agents SET status = 'offline'
WHERE pos IN (SELECT a.pos FROM agents a
	WHERE a.status = 'stale' AND a.local = 0 AND a.last_seen < ?1
	  AND NOT EXISTS (SELECT 1 FROM nodes n WHERE n.peer_id = a.host_peer_id)
	LIMIT ?2)`

// ExpireUnheard implements store.Network: a walk of agents_unheard up to
// before, each candidate's host probed in the nodes table's primary key,
// store.ExpireBatch listings a statement, each committed on its own: a
// backlog of a million never-heard listings is taken in steps that each
// end well within the store deadline, and what a cut-short sweep expired
// stays expired.
func (db *DB) ExpireUnheard(ctx context.Context, before time.Time) (int, error) {
	return store.ExpireInBatches(ctx, func(ctx context.Context) (int, error) {
		res, err := db.w.ExecContext(ctx, expireUnheardSQL, nanos(before), store.ExpireBatch)
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
