package postgres

import (
	"context"
	"strings"

	"github.com/agentsite/agentsite/store"
)

// matchWhere is the conditions on agents a of the rows a search matches
// (its filters and text; TagFacets, CountMatches). ok is false when a
// value cannot match anything.
func (b *sqlBuilder) matchWhere(q store.SearchQuery) (where []string, ok bool) {
	if where, ok = b.filters(q); !ok {
		return nil, false
	}
	if terms := store.SearchTerms(q.Q); len(terms) > 0 {
		where = append(where, "a.search @@ to_tsquery('simple', "+b.arg(tsQuery(terms))+")")
	}
	return where, true
}

// CountMatches implements store.MatchCounter: the rows of agents a
// search matches (TagFacets' conditions), counted up to upTo (exact is
// false when there are more).
func (db *DB) CountMatches(ctx context.Context, q store.SearchQuery, upTo int) (int, bool, error) {
	if upTo <= 0 {
		return 0, false, nil
	}
	var b sqlBuilder
	where, ok := b.matchWhere(q)
	if !ok {
		return 0, true, nil
	}
	sql := `-- name: count_matches
SELECT count(*) FROM (SELECT 1 FROM agents a WHERE ` + strings.Join(where, " AND ") + ` LIMIT ` + b.arg(upTo+1) + `) matched`
	var n int
	if err := db.q.QueryRow(ctx, sql, b.args...).Scan(&n); err != nil {
		return 0, false, dbErr("count matches", err)
	}
	if n > upTo {
		return upTo, false, nil
	}
	return n, true, nil
}
