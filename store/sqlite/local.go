package sqlite

import (
	"context"
	"database/sql"

	"github.com/agentsite/agentsite/store"
)

// localRefColumns is what scanLocalRef reads: the row's narrow columns
// and the backend's kind, never the envelope or the record's JSON.
const localRefColumns = `a.id, a.name, a.publisher, a.seq, a.expires_at,
	coalesce(json_extract(b.config, '$.kind'), '')`

// localIDSQL walks the hosted listings by id (agents_local_id, named: the
// planner took agents_local, every hosted row, and sorted them, so each
// page of a host of 100k agents read all 100k and missed the store
// deadline).
const localIDSQL = `-- name: local_refs
SELECT ` + localRefColumns + `
FROM agents a INDEXED BY agents_local_id LEFT JOIN agent_backends b ON b.agent_id = a.id
WHERE a.local = 1 AND a.tombstone = 0 AND a.id > ?
ORDER BY a.id LIMIT ?`

// localDueSQL walks the hosted listings that expire before a time, the
// first to expire first (agents_local_due; its publisher column skips
// another replica's rows without reading them).
const localDueSQL = `-- name: local_due
SELECT ` + localRefColumns + `
FROM agents a INDEXED BY agents_local_due LEFT JOIN agent_backends b ON b.agent_id = a.id
WHERE a.local = 1 AND a.tombstone = 0 AND a.expires_at < ?
	AND (a.expires_at, a.id) > (?, ?) AND (? = '' OR a.publisher = ?)
ORDER BY a.expires_at, a.id LIMIT ?`

// LocalRefs implements store.Locals.
func (db *DB) LocalRefs(ctx context.Context, q store.LocalQuery) ([]store.LocalRef, error) {
	var (
		rows rowSet
		err  error
	)
	if q.DueBefore.IsZero() {
		rows, err = db.r.QueryContext(ctx, localIDSQL, q.After, q.PageLimit())
	} else {
		rows, err = db.r.QueryContext(ctx, localDueSQL, q.DueBefore.UnixNano(),
			q.AfterExpiry.UnixNano(), q.After, q.Publisher, q.Publisher, q.PageLimit())
	}
	if err != nil {
		return nil, dbErr("local refs", err)
	}
	defer rows.Close()
	out := []store.LocalRef{}
	for rows.Next() {
		var (
			r       store.LocalRef
			seq     int64
			expires sql.NullInt64
		)
		if err := rows.Scan(&r.ID, &r.Name, &r.Publisher, &seq, &expires, &r.Kind); err != nil {
			return nil, dbErr("local refs", err)
		}
		r.Seq, r.ExpiresAt = uint64(seq), fromNanos(expires)
		out = append(out, r)
	}
	return out, dbErr("local refs", rows.Err())
}

// CountLocal implements store.Locals: a walk of agents_local_id alone
// (the rowid is in it), which holds only the hosted listings.
func (db *DB) CountLocal(ctx context.Context) (store.LocalCount, error) {
	var c store.LocalCount
	err := db.r.QueryRowContext(ctx, `-- name: count_local
SELECT count(*), coalesce(sum(pos), 0) FROM agents INDEXED BY agents_local_id
WHERE local = 1 AND tombstone = 0`).Scan(&c.N, &c.Digest)
	return c, dbErr("count local agents", err)
}
