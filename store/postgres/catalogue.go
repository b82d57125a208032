package postgres

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
// are left out: the receiving peer would reject them.
//
// Plan: a forward walk of agents_pos from after, each row joined to its
// agent_records row, that stops at limit+1; with a tag, the same walk
// filtered on tags, or for a rare tag a bitmap scan of agents_tags.
func (db *DB) CatalogueEnvelopes(ctx context.Context, after int64, tag string, limit int, now time.Time) (envelopes [][]byte, next int64, err error) {
	limit = store.NormalizeLimit(limit)
	if unmatchable(tag) {
		return [][]byte{}, 0, nil
	}
	var b sqlBuilder
	where := "a.pos > " + b.arg(after) + " AND a.expires_at > " + b.arg(now)
	if tag != "" {
		where += " AND a.tags @> " + b.arg([]string{tag}) + "::text[]"
	}
	rows, err := db.q.Query(ctx, `-- name: catalogue_envelopes
SELECT a.pos, r.envelope
FROM `+listingFrom+`
WHERE `+where+` AND r.envelope IS NOT NULL
ORDER BY a.pos
LIMIT `+b.arg(limit+1), b.args...)
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
