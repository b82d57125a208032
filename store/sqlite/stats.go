package sqlite

import (
	"context"

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
	rows, err := db.r.QueryContext(ctx, `-- name: count_by_status
SELECT status, n FROM status_counts WHERE n > 0`)
	if err != nil {
		return nil, dbErr("count by status", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var (
			status string
			n      int
		)
		if err := rows.Scan(&status, &n); err != nil {
			return nil, dbErr("count by status", err)
		}
		out[status] = n
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr("count by status", err)
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
	defer rows.Close()
	out := []store.TagCount{}
	for rows.Next() {
		var tc store.TagCount
		if err := rows.Scan(&tc.Tag, &tc.Count); err != nil {
			return nil, dbErr("list tags", err)
		}
		out = append(out, tc)
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr("list tags", err)
	}
	return out, nil
}
