package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentsite/agentsite/store"
)

// localRefColumns is what LocalRefs reads: the narrow columns and the
// backend's kind, never the envelope or the record's JSON. The kind is a
// look-up by agent id for each row of the page: as a join, the planner
// merged the page with agent_backends read from its first row, so a page
// deep in the walk of a host of 100k agents read every backend before it.
const localRefColumns = `a.id, r.name, r.publisher, a.seq, a.expires_at,
	coalesce((SELECT b.config->>'kind' FROM agent_backends b WHERE b.agent_id = a.id), '')`

const localRefFrom = `agents a JOIN agent_records r ON r.id = a.id`

// LocalRefs implements store.Locals: by id through agents_local_id, or
// what is due through agents_local_due.
func (db *DB) LocalRefs(ctx context.Context, q store.LocalQuery) ([]store.LocalRef, error) {
	var (
		rows pgx.Rows
		err  error
	)
	if q.DueBefore.IsZero() {
		rows, err = db.q.Query(ctx, `-- name: local_refs
SELECT `+localRefColumns+` FROM `+localRefFrom+`
WHERE a.local AND NOT a.tombstone AND a.id > $1
ORDER BY a.id LIMIT $2`, q.After, q.PageLimit())
	} else {
		after := q.AfterExpiry
		if after.IsZero() {
			after = time.Unix(0, 0)
		}
		rows, err = db.q.Query(ctx, `-- name: local_due
SELECT `+localRefColumns+` FROM `+localRefFrom+`
WHERE a.local AND NOT a.tombstone AND a.expires_at < $1
	AND (a.expires_at, a.id) > ($2, $3) AND ($4 = '' OR r.publisher = $4)
ORDER BY a.expires_at, a.id LIMIT $5`, q.DueBefore, after, q.After, q.Publisher, q.PageLimit())
	}
	if err != nil {
		return nil, dbErr("local refs", err)
	}
	out := []store.LocalRef{}
	var (
		r       store.LocalRef
		seq     int64
		expires time.Time
	)
	_, err = pgx.ForEachRow(rows, []any{&r.ID, &r.Name, &r.Publisher, &seq, &expires, &r.Kind}, func() error {
		r.Seq, r.ExpiresAt = uint64(seq), expires.UTC()
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, dbErr("local refs", err)
	}
	return out, nil
}

// CountLocal implements store.Locals: an index-only scan of agents_local
// (pos, of the hosted listings only).
func (db *DB) CountLocal(ctx context.Context) (store.LocalCount, error) {
	var c store.LocalCount
	err := db.q.QueryRow(ctx, `-- name: count_local
SELECT count(*), coalesce(sum(pos), 0)::bigint FROM agents WHERE local AND NOT tombstone`).Scan(&c.N, &c.Digest)
	if err != nil {
		return store.LocalCount{}, dbErr("count local agents", err)
	}
	return c, nil
}
