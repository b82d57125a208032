package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/agentsite/agentsite/store"
)

var _ store.SyncFeed = (*DB)(nil)

// FeedID implements store.SyncFeed (migration 0008 made it).
func (db *DB) FeedID(ctx context.Context) (string, error) {
	var id string
	if err := db.r.QueryRowContext(ctx, `-- name: sync_feed_id
SELECT id FROM sync_feed LIMIT 1`).Scan(&id); err != nil {
		return "", dbErr("sync feed id", err)
	}
	return id, nil
}

// syncChangesSQL walks agent_sync_seq (migration 0008) from ?1 for at most ?2 changes,
// each joined to its listing by rowid; the envelope is read only for the
// rows in the id range [?3, ?4) (?4 ” is no bound) that are valid at ?5.
// SQLite has one writer at a time and a reader sees whole transactions, so
// every number up to the largest one read is settled.
const syncChangesSQL = `-- name: sync_changes
SELECT c.sync_seq,
	CASE WHEN a.id >= ?3 AND (?4 = '' OR a.id < ?4) AND a.expires_at > ?5 THEN a.envelope END
FROM (SELECT pos, sync_seq FROM agent_sync WHERE sync_seq > ?1 ORDER BY sync_seq LIMIT ?2) AS c
CROSS JOIN agents a ON a.pos = c.pos
ORDER BY c.sync_seq`

// SyncChanges implements store.SyncFeed.
func (db *DB) SyncChanges(ctx context.Context, after int64, lo, hi string, limit int, now time.Time) ([][]byte, int64, bool, error) {
	if limit <= 0 {
		var head int64
		if err := db.r.QueryRowContext(ctx, `-- name: sync_head
SELECT coalesce(max(sync_seq), 0) FROM agent_sync`).Scan(&head); err != nil {
			return nil, 0, false, dbErr("sync head", err)
		}
		return [][]byte{}, head, false, nil
	}
	limit = store.NormalizeLimit(limit)
	rows, err := db.r.QueryContext(ctx, syncChangesSQL, after, store.MaxSyncScan, lo, hi, now.UnixNano())
	if err != nil {
		return nil, 0, false, dbErr("sync changes", err)
	}
	defer rows.Close()
	envs, next, scanned := [][]byte{}, after, 0
	more := false
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
	return envs, next, more, nil
}

// SyncCursor implements store.SyncFeed.
func (db *DB) SyncCursor(ctx context.Context, peer string, shard int) (string, int64, bool, error) {
	var (
		feed     string
		after    int64
		complete bool
	)
	err := db.r.QueryRowContext(ctx, `-- name: sync_cursor
SELECT feed, after_seq, complete FROM sync_cursors WHERE peer_id = ?1 AND shard = ?2`, peer, shard).Scan(&feed, &after, &complete)
	if errors.Is(err, sql.ErrNoRows) {
		return "", 0, false, nil
	}
	if err != nil {
		return "", 0, false, dbErr("sync cursor", err)
	}
	return feed, after, complete, nil
}

// SetSyncCursor implements store.SyncFeed.
func (db *DB) SetSyncCursor(ctx context.Context, peer string, shard int, feed string, after int64, complete bool, at time.Time) error {
	_, err := db.w.ExecContext(ctx, `-- name: set_sync_cursor
INSERT INTO sync_cursors (peer_id, shard, feed, after_seq, complete, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
ON CONFLICT (peer_id, shard) DO UPDATE SET feed = excluded.feed, after_seq = excluded.after_seq,
	complete = excluded.complete, updated_at = excluded.updated_at`, peer, shard, feed, after, complete, at.UnixNano())
	if err != nil {
		return dbErr("set sync cursor", err)
	}
	return nil
}

// PruneSyncCursors implements store.SyncFeed (a scan of a table of a few
// rows per peer synced with).
func (db *DB) PruneSyncCursors(ctx context.Context, before time.Time) (int, error) {
	res, err := db.w.ExecContext(ctx, `-- name: prune_sync_cursors
DELETE FROM sync_cursors WHERE peer_id <> '' AND updated_at < ?1`, before.UnixNano())
	if err != nil {
		return 0, dbErr("prune sync cursors", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, dbErr("prune sync cursors", err)
	}
	return int(n), nil
}
