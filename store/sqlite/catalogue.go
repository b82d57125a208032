package sqlite

import (
	"context"
	"time"

	"github.com/agentsite/agentsite/store"
)

// CatalogueEnvelopes serves catalogue sync (p2p's /agentsite/sync/1.0.0):
// the signed envelopes of listings still valid at now, tombstones included
// so deletes propagate, in first-seen order after position after (0: from
// the start), at most limit (store.NormalizeLimit), only those tagged tag if
// it is not empty. next is the position to continue after, 0 once the
// catalogue is exhausted (one extra row is read to know). Expired records
// are left out: the receiving peer would reject them and hold it against us.
//
// Plan: a forward walk of the rowid from after (or of agent_tags' primary
// key for a tag) that stops at limit+1.
func (db *DB) CatalogueEnvelopes(ctx context.Context, after int64, tag string, limit int, now time.Time) (envelopes [][]byte, next int64, err error) {
	limit = store.NormalizeLimit(limit)
	query := `-- name: catalogue_envelopes
SELECT a.pos, a.envelope FROM agents a
WHERE a.pos > ?1 AND a.expires_at > ?2 AND a.envelope IS NOT NULL
ORDER BY a.pos LIMIT ?3`
	args := []any{after, now.UnixNano(), limit + 1}
	if tag != "" {
		query = `-- name: catalogue_envelopes
SELECT a.pos, a.envelope FROM agent_tags t JOIN agents a ON a.pos = t.agent_pos
WHERE t.tag = ?4 AND t.agent_pos > ?1 AND a.expires_at > ?2 AND a.envelope IS NOT NULL
ORDER BY t.agent_pos LIMIT ?3`
		args = append(args, tag)
	}
	rows, err := db.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, 0, dbErr("catalogue envelopes", err)
	}
	defer rows.Close()
	envelopes = [][]byte{}
	var last int64
	for rows.Next() {
		var (
			pos int64
			env []byte
		)
		if err := rows.Scan(&pos, &env); err != nil {
			return nil, 0, dbErr("catalogue envelopes", err)
		}
		if len(envelopes) == limit {
			next = last
			break
		}
		envelopes = append(envelopes, env)
		last = pos
	}
	if err := rows.Err(); err != nil {
		return nil, 0, dbErr("catalogue envelopes", err)
	}
	return envelopes, next, nil
}
