package sqlite

import (
	"context"
	"strings"

	"github.com/agentsite/agentsite/store"
)

// matchWhere is the conditions on agents a of the listings a search
// matches, both health passes at once (TagFacets, CountMatches).
func (b *sqlBuilder) matchWhere(q store.SearchQuery) []string {
	where := []string{"a.tombstone = 0", "a.status IN (" + b.list(statusFilter(q.Statuses)) + ")"}
	if hs := dedupe(q.Health); len(hs) > 0 {
		where = append(where, "a.health_state IN ("+b.list(hs)+")")
	}
	for _, tag := range dedupe(q.Tags) {
		where = append(where, "EXISTS (SELECT 1 FROM agent_tags t2 WHERE t2.tag = "+b.arg(tag)+" AND t2.agent_pos = a.pos)")
	}
	if q.Owner != "" {
		where = append(where, "a.owner = "+b.arg(q.Owner))
	}
	if ps := dedupe(q.Publishers); len(ps) > 0 {
		where = append(where, "a.publisher IN ("+b.list(ps)+")")
	}
	if terms := store.SearchTerms(q.Q); len(terms) > 0 {
		where = append(where, "a.pos IN (SELECT rowid FROM agents_fts WHERE agents_fts MATCH "+b.arg(ftsQuery(terms))+")")
	}
	return where
}

// CountMatches implements store.MatchCounter: the matching listings,
// counted up to upTo (exact is false when there are more).
func (db *DB) CountMatches(ctx context.Context, q store.SearchQuery, upTo int) (int, bool, error) {
	if upTo <= 0 {
		return 0, false, nil
	}
	var b sqlBuilder
	where := b.matchWhere(q)
	query := `-- name: count_matches
SELECT count(*) FROM (SELECT 1 FROM agents a WHERE ` + strings.Join(where, " AND ") + ` LIMIT ` + b.arg(upTo+1) + `)`
	var n int
	if err := db.r.QueryRowContext(ctx, query, b.args...).Scan(&n); err != nil {
		return 0, false, dbErr("count matches", err)
	}
	if n > upTo {
		return upTo, false, nil
	}
	return n, true, nil
}
