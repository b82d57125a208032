package sqlite

import (
	"context"
	"strings"

	"github.com/agentsite/agentsite/store"
)

// Stats implements store.Catalogue from the counters the triggers keep
// (status_counts, tag_counts): constant time however many listings. Nodes
// counts every known node, whatever its status (as store/postgres does).
func (db *DB) Stats(ctx context.Context) (store.Stats, error) {
	var s store.Stats
	err := db.r.QueryRowContext(ctx, `-- name: stats
SELECT
	(SELECT coalesce(sum(n), 0) FROM status_counts WHERE status IN ('online', 'stale')),
	(SELECT coalesce(sum(n), 0) FROM status_counts WHERE status = 'online'),
	(SELECT count(*) FROM tag_counts WHERE n > 0),
	(SELECT count(*) FROM nodes)`).Scan(&s.Agents, &s.OnlineAgents, &s.Tags, &s.Nodes)
	if err != nil {
		return store.Stats{}, dbErr("stats", err)
	}
	return s, nil
}

// CountByStatus implements store.Catalogue; statuses without listings are
// absent from the map.
func (db *DB) CountByStatus(ctx context.Context) (map[string]int, error) {
	return db.countBy(ctx, "count by status", `-- name: count_by_status
SELECT status, n FROM status_counts WHERE n > 0`)
}

// countBy runs query, which answers (key, count) rows, into a map; op
// names it in errors.
func (db *DB) countBy(ctx context.Context, op, query string) (map[string]int, error) {
	rows, err := db.r.QueryContext(ctx, query)
	if err != nil {
		return nil, dbErr(op, err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var (
			key string
			n   int
		)
		if err := rows.Scan(&key, &n); err != nil {
			return nil, dbErr(op, err)
		}
		out[key] = n
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr(op, err)
	}
	return out, nil
}

// ListTags implements store.Catalogue: most used first, then by name, from
// the counts the triggers keep (a few thousand rows at most, however many
// listings).
func (db *DB) ListTags(ctx context.Context, limit int) ([]store.TagCount, error) {
	rows, err := db.r.QueryContext(ctx, `-- name: list_tags
SELECT tag, n FROM tag_counts WHERE n > 0
ORDER BY n DESC, tag
LIMIT ?`, store.NormalizeLimit(limit))
	if err != nil {
		return nil, dbErr("list tags", err)
	}
	return tagCounts(rows, "list tags")
}

// TagFacets implements store.Catalogue: the tags of the matching listings
// (the filters of SearchAgents, both health passes at once), grouped.
func (db *DB) TagFacets(ctx context.Context, q store.SearchQuery, limit int) ([]store.TagCount, error) {
	var b sqlBuilder
	where := b.matchWhere(q)
	query := `-- name: tag_facets
SELECT t.tag, count(*) AS n FROM agents a JOIN agent_tags t ON t.agent_pos = a.pos
WHERE ` + strings.Join(where, " AND ") + `
GROUP BY t.tag
ORDER BY n DESC, t.tag
LIMIT ` + b.arg(store.NormalizeLimit(limit))
	rows, err := db.r.QueryContext(ctx, query, b.args...)
	if err != nil {
		return nil, dbErr("tag facets", err)
	}
	return tagCounts(rows, "tag facets")
}

// tagCounts reads (tag, count) rows and closes them; op names the read in
// errors.
func tagCounts(rows rowSet, op string) ([]store.TagCount, error) {
	defer rows.Close()
	out := []store.TagCount{}
	for rows.Next() {
		var tc store.TagCount
		if err := rows.Scan(&tc.Tag, &tc.Count); err != nil {
			return nil, dbErr(op, err)
		}
		out = append(out, tc)
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr(op, err)
	}
	return out, nil
}
