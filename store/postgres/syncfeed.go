package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentsite/agentsite/store"
)

var _ store.SyncFeed = (*DB)(nil)

// FeedID implements store.SyncFeed (migration 0008 made it).
func (db *DB) FeedID(ctx context.Context) (string, error) {
	var id string
	if err := db.q.QueryRow(ctx, `-- name: sync_feed_id
SELECT id FROM sync_feed LIMIT 1`).Scan(&id); err != nil {
		return "", dbErr("sync feed id", err)
	}
	return id, nil
}

// settleWait bounds how long SyncChanges waits for the transactions that
// may hold numbers below the horizon; settlePoll is how often it looks.
const (
	settleWait = 2 * time.Second
	settlePoll = 20 * time.Millisecond
)

// horizon is the largest change number h such that every number up to h
// is visible or will never be (settled): a number is taken when a row is
// written and becomes visible when its transaction commits, so numbers
// appear out of order. h is the sequence's last value read first; then
// the transactions that write agent_sync: each took its lock on the table
// (RowExclusiveLock, held to its end) before it took a number, so every
// transaction that holds a number up to h is among those holding the lock
// when it is read after h. Once they have ended, h is settled; settled is
// false when they did not end within settleWait. Only this database's
// writers of this table count: a long transaction elsewhere on the
// cluster (another database, a report, a stalled client) does not hold
// the feed back, as the cluster-wide snapshot did.
func (db *DB) horizon(ctx context.Context) (h int64, settled bool, err error) {
	if err := db.q.QueryRow(ctx, `-- name: sync_sequence
SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END FROM agent_sync_seq`).Scan(&h); err != nil {
		return 0, false, dbErr("sync horizon", err)
	}
	var writers []string
	if err := db.q.QueryRow(ctx, `-- name: sync_writers
SELECT coalesce(array_agg(virtualtransaction), '{}') FROM pg_locks
WHERE locktype = 'relation' AND mode = 'RowExclusiveLock' AND granted
	AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
	AND relation = 'agent_sync'::regclass`).Scan(&writers); err != nil {
		return 0, false, dbErr("sync horizon", err)
	}
	deadline := time.Now().Add(settleWait)
	for running := len(writers) > 0; running; {
		if err := db.q.QueryRow(ctx, `-- name: sync_settled
SELECT EXISTS (SELECT 1 FROM pg_locks
WHERE locktype = 'relation' AND mode = 'RowExclusiveLock' AND virtualtransaction = ANY($1)
	AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
	AND relation = 'agent_sync'::regclass)`, writers).Scan(&running); err != nil {
			return 0, false, dbErr("sync horizon", err)
		}
		if !running {
			break
		}
		if time.Now().After(deadline) {
			return h, false, nil
		}
		t := time.NewTimer(settlePoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return 0, false, ctx.Err()
		case <-t.C:
		}
	}
	return h, true, nil
}

// syncChangesSQL walks agent_sync_by_seq (migration 0008) from $1 up to the horizon $6 for
// at most $2 changes, each joined to its listing; the envelope is read
// only for rows in the id range [$3, $4) ($4 ” is no bound, byte order)
// that are valid at $5.
const syncChangesSQL = `-- name: sync_changes
SELECT c.sync_seq,
	CASE WHEN a.id COLLATE "C" >= $3 AND ($4 = '' OR a.id COLLATE "C" < $4) AND a.expires_at > $5 THEN r.envelope END
FROM (SELECT pos, sync_seq FROM agent_sync WHERE sync_seq > $1 AND sync_seq <= $6 ORDER BY sync_seq LIMIT $2) AS c
	JOIN agents a ON a.pos = c.pos
	JOIN agent_records r ON r.id = a.id
ORDER BY c.sync_seq`

// SyncChanges implements store.SyncFeed: nothing past the settled
// horizon is served, so a reader continuing after next misses no number
// that an in-flight transaction holds. While transactions that may hold
// numbers stay open (past settleWait), nothing new is served.
func (db *DB) SyncChanges(ctx context.Context, after int64, lo, hi string, limit int, now time.Time) ([][]byte, int64, bool, error) {
	h, settled, err := db.horizon(ctx)
	if err != nil {
		return nil, 0, false, err
	}
	if limit <= 0 {
		return [][]byte{}, h, !settled, nil // more: h is not settled yet
	}
	if !settled || h <= after {
		return [][]byte{}, after, false, nil
	}
	limit = store.NormalizeLimit(limit)
	rows, err := db.q.Query(ctx, syncChangesSQL, after, store.MaxSyncScan, lo, hi, now, h)
	if err != nil {
		return nil, 0, false, dbErr("sync changes", err)
	}
	defer rows.Close()
	envs, next, scanned, more := [][]byte{}, after, 0, false
	for rows.Next() {
		var (
			seq int64
			env []byte
		)
		if err := rows.Scan(&seq, &env); err != nil {
			return nil, 0, false, dbErr("sync changes", err)
		}
		if env != nil && len(envs) == limit {
			more = true
			break
		}
		scanned++
		next = seq
		if env != nil {
			envs = append(envs, env)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, 0, false, dbErr("sync changes", err)
	}
	if scanned == store.MaxSyncScan {
		more = true
	}
	if !more {
		next = h // the numbers past the last row read and up to h were superseded
	}
	return envs, next, more, nil
}

// SyncCursor implements store.SyncFeed.
func (db *DB) SyncCursor(ctx context.Context, peer string, shard int) (string, int64, bool, error) {
	var (
		feed     string
		after    int64
		complete bool
	)
	err := db.q.QueryRow(ctx, `-- name: sync_cursor
SELECT feed, after_seq, complete FROM sync_cursors WHERE peer_id = $1 AND shard = $2`, peer, shard).Scan(&feed, &after, &complete)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", 0, false, nil
	}
	if err != nil {
		return "", 0, false, dbErr("sync cursor", err)
	}
	return feed, after, complete, nil
}

// SetSyncCursor implements store.SyncFeed.
func (db *DB) SetSyncCursor(ctx context.Context, peer string, shard int, feed string, after int64, complete bool, at time.Time) error {
	_, err := db.q.Exec(ctx, `-- name: set_sync_cursor
INSERT INTO sync_cursors (peer_id, shard, feed, after_seq, complete, updated_at) VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (peer_id, shard) DO UPDATE SET feed = excluded.feed, after_seq = excluded.after_seq,
	complete = excluded.complete, updated_at = excluded.updated_at`, peer, shard, feed, after, complete, at)
	if err != nil {
		return dbErr("set sync cursor", err)
	}
	return nil
}

// PruneSyncCursors implements store.SyncFeed.
func (db *DB) PruneSyncCursors(ctx context.Context, before time.Time) (int, error) {
	tag, err := db.q.Exec(ctx, `-- name: prune_sync_cursors
DELETE FROM sync_cursors WHERE peer_id <> '' AND updated_at < $1`, before)
	if err != nil {
		return 0, dbErr("prune sync cursors", err)
	}
	return int(tag.RowsAffected()), nil
}
