package postgres

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

// SearchAgents implements store.Catalogue. The SQL text is assembled only from
// constant fragments; every value (terms, tags, statuses, health, owner,
// cursor) is a bind parameter.
//
// Every order starts with notFailing, so failing agents come last.
//
// Plans (EXPLAIN ANALYZE at 100k listings, see bench_test.go): without text,
// a backward walk of agents_visible_health_pos (default statuses) or
// agents_status_health_pos (one explicit status) that stops after a page;
// tags are one containment filter on the row (tags @> ...), checked during
// that walk or, for a rare tag, served by the GIN index agents_tags; with
// text, a bitmap scan of the GIN index agents_search, then ts_rank on each
// match and a top-N sort on (not failing, rank, pos). ts_rank, not
// ts_rank_cd: it costs a third as much per match, which is what a
// one-letter query at 100k listings pays.
func (db *DB) SearchAgents(ctx context.Context, q store.SearchQuery) (store.SearchPage, error) {
	cur, hasCursor, err := store.DecodeCursor(q.Cursor)
	if err != nil {
		return store.SearchPage{}, fmt.Errorf("postgres: search agents: %w", err)
	}
	limit := store.NormalizeLimit(q.Limit)
	terms := store.SearchTerms(q.Q)
	if unmatchable(q.Owner) || slices.ContainsFunc(q.Tags, unmatchable) || slices.ContainsFunc(q.Statuses, unmatchable) || slices.ContainsFunc(q.Health, unmatchable) {
		return store.SearchPage{Listings: []store.Listing{}}, nil
	}

	var b sqlBuilder
	var where []string
	switch st := statusFilter(q.Statuses); len(st) {
	case 0:
		where = append(where, "a.visible")
	case 1:
		where = append(where, "NOT a.tombstone", "a.status = "+b.arg(st[0]))
	default:
		where = append(where, "NOT a.tombstone", "a.status = ANY("+b.arg(st)+")")
	}
	if tags := dedupe(q.Tags); len(tags) > 0 {
		where = append(where, "a.tags @> "+b.arg(tags)+"::text[]")
	}
	if hs := dedupe(q.Health); len(hs) > 0 {
		where = append(where, "a.health_state = ANY("+b.arg(hs)+")")
	}
	if q.Owner != "" {
		where = append(where, "a.owner = "+b.arg(q.Owner))
	}

	if q.Sort == store.SortName {
		return db.searchByName(ctx, &b, where, terms, cur, hasCursor, limit)
	}

	// The inner query picks the page on the narrow agents table; only those
	// rows are then joined with agent_records. It is aliased a, like the
	// table, so listingColumns reads from it.
	var inner string
	if len(terms) > 0 && q.Sort == store.SortNewest {
		// Newest first among the matches: the keyset of a search without
		// text, the text one more filter.
		where = append(where, "a.search @@ to_tsquery('simple', "+b.arg(tsQuery(terms))+")")
		terms = nil
	}
	if len(terms) > 0 {
		where = append(where, "a.search @@ query")
		if hasCursor {
			where = append(where, "("+notFailing+", rk.rank, a.pos) < ("+b.arg(!cur.Failing)+"::boolean, "+b.arg(cur.Rank)+"::float8, "+b.arg(cur.Pos)+"::bigint)")
		}
		inner = `SELECT ` + agentColumns + `, rk.rank
	FROM agents a
		CROSS JOIN to_tsquery('simple', ` + b.arg(tsQuery(terms)) + `) AS query
		CROSS JOIN LATERAL (SELECT ts_rank(a.search, query)::float8 AS rank) AS rk
	WHERE ` + strings.Join(where, " AND ") + `
	ORDER BY ` + notFailing + ` DESC, rk.rank DESC, a.pos DESC
	LIMIT ` + b.arg(limit+1)
	} else {
		if hasCursor {
			where = append(where, "("+notFailing+", a.pos) < ("+b.arg(!cur.Failing)+"::boolean, "+b.arg(cur.Pos)+"::bigint)")
		}
		inner = `SELECT ` + agentColumns + `, 0::float8 AS rank
	FROM agents a
	WHERE ` + strings.Join(where, " AND ") + `
	ORDER BY ` + notFailing + ` DESC, a.pos DESC
	LIMIT ` + b.arg(limit+1)
	}
	sql := `-- name: search_agents
SELECT ` + listingColumns + `, a.rank
FROM (` + inner + `) AS a
	JOIN agent_records r ON r.id = a.id
ORDER BY ` + notFailing + ` DESC, a.rank DESC, a.pos DESC`

	rows, err := db.q.Query(ctx, sql, b.args...)
	if err != nil {
		return store.SearchPage{}, dbErr("search agents", err)
	}
	defer rows.Close()
	page := store.SearchPage{Listings: make([]store.Listing, 0, limit)}
	var next store.Cursor
	for rows.Next() {
		var rank float64
		l, pos, err := scanListing(rows, &rank)
		if err != nil {
			return store.SearchPage{}, dbErr("search agents", err)
		}
		if len(page.Listings) == limit {
			page.NextCursor = store.EncodeCursor(next)
			break
		}
		page.Listings = append(page.Listings, l)
		next = store.Cursor{Rank: rank, Pos: pos, Failing: l.Health.State == agent.HealthFailing}
	}
	if err := rows.Err(); err != nil {
		return store.SearchPage{}, dbErr("search agents", err)
	}
	return page, nil
}

// notFailing is the first key of every search order, spelled as in the
// indexes agents_visible_health_pos and agents_status_health_pos (migration
// 0003) so the planner walks them.
const notFailing = `(a.health_state <> 'failing')`

// unmatchable reports whether a filter value can never equal a stored one:
// Postgres text holds neither NUL nor invalid UTF-8, and a query binding
// such a value fails instead of matching nothing.
func unmatchable(s string) bool {
	return strings.IndexByte(s, 0) >= 0 || !utf8.ValidString(s)
}

// tsQuery turns store.SearchTerms (letters and digits only) into a
// to_tsquery argument: every term prefix-matched, all of them required.
func tsQuery(terms []string) string {
	parts := make([]string, len(terms))
	for i, t := range terms {
		parts[i] = t + ":*"
	}
	return strings.Join(parts, " & ")
}

// statusFilter returns the statuses to match, or nil for the default
// (online and stale), which the agents_visible_health_pos index serves.
func statusFilter(statuses []string) []string {
	st := dedupe(statuses)
	slices.Sort(st)
	if len(st) == 0 || slices.Equal(st, []string{store.StatusOnline, store.StatusStale}) {
		return nil
	}
	return st
}

func dedupe(xs []string) []string {
	out := make([]string, 0, len(xs))
	for _, x := range xs {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// sqlBuilder numbers bind parameters.
type sqlBuilder struct {
	args []any
}

// arg adds a bind parameter and returns its placeholder.
func (b *sqlBuilder) arg(v any) string {
	b.args = append(b.args, v)
	return "$" + strconv.Itoa(len(b.args))
}

// ListTags implements store.Catalogue: an index-only scan of
// agent_tags_visible.
func (db *DB) ListTags(ctx context.Context, limit int) ([]store.TagCount, error) {
	rows, err := db.q.Query(ctx, `-- name: list_tags
SELECT tag, count(*) AS n FROM agent_tags
WHERE visible
GROUP BY tag
ORDER BY n DESC, tag
LIMIT $1`, store.NormalizeLimit(limit))
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

// Stats implements store.Catalogue. Listings are counted in one index-only scan
// of agents_status_health_pos; distinct tags with a skip scan of
// agent_tags_visible (one index descent per distinct tag, not one row per
// listing and tag).
func (db *DB) Stats(ctx context.Context) (store.Stats, error) {
	var s store.Stats
	err := db.q.QueryRow(ctx, `-- name: stats
WITH RECURSIVE tags AS (
	(SELECT tag FROM agent_tags WHERE visible ORDER BY tag LIMIT 1)
	UNION ALL
	SELECT (SELECT t.tag FROM agent_tags t WHERE t.visible AND t.tag > tags.tag ORDER BY t.tag LIMIT 1)
	FROM tags WHERE tags.tag IS NOT NULL
)
SELECT count(*), count(*) FILTER (WHERE status = 'online'),
	(SELECT count(tag) FROM tags),
	(SELECT count(*) FROM nodes)
FROM agents WHERE NOT tombstone AND status IN ('online', 'stale')`).Scan(&s.Agents, &s.OnlineAgents, &s.Tags, &s.Nodes)
	if err != nil {
		return store.Stats{}, dbErr("stats", err)
	}
	return s, nil
}

// nameKey is the sort key of store.SortName, compared by bytes (COLLATE
// "C", whatever the database's collation); the same expression orders and
// bounds the keyset.
const nameKey = `(lower(r.display_name) COLLATE "C")`

// searchByName is SearchAgents with store.SortName: not failing first, then
// by nameKey and pos, the text (if any) one more filter. where holds the
// other filters, their arguments in b.
func (db *DB) searchByName(ctx context.Context, b *sqlBuilder, where []string, terms []string, cur store.Cursor, hasCursor bool, limit int) (store.SearchPage, error) {
	if len(terms) > 0 {
		where = append(where, "a.search @@ to_tsquery('simple', "+b.arg(tsQuery(terms))+")")
	}
	if hasCursor {
		k, p := b.arg(cur.Name)+"::text", b.arg(cur.Pos)+"::bigint"
		after := "(" + nameKey + " > " + k + " OR (" + nameKey + " = " + k + " AND a.pos > " + p + "))"
		if cur.Failing {
			where = append(where, "NOT "+notFailing, after)
		} else {
			where = append(where, "(NOT "+notFailing+" OR "+after+")")
		}
	}
	sql := `-- name: search_agents_by_name
SELECT ` + listingColumns + `, ` + nameKey + `
FROM ` + listingFrom + `
WHERE ` + strings.Join(where, " AND ") + `
ORDER BY ` + notFailing + ` DESC, ` + nameKey + `, a.pos
LIMIT ` + b.arg(limit+1)
	rows, err := db.q.Query(ctx, sql, b.args...)
	if err != nil {
		return store.SearchPage{}, dbErr("search agents", err)
	}
	defer rows.Close()
	page := store.SearchPage{Listings: make([]store.Listing, 0, limit)}
	var next store.Cursor
	for rows.Next() {
		var key string
		l, pos, err := scanListing(rows, &key)
		if err != nil {
			return store.SearchPage{}, dbErr("search agents", err)
		}
		if len(page.Listings) == limit {
			page.NextCursor = store.EncodeCursor(next)
			break
		}
		page.Listings = append(page.Listings, l)
		next = store.Cursor{Pos: pos, Name: key, Failing: l.Health.State == agent.HealthFailing}
	}
	if err := rows.Err(); err != nil {
		return store.SearchPage{}, dbErr("search agents", err)
	}
	return page, nil
}

// TagFacets implements store.Catalogue: the tags of the matching rows of
// agents (the filters of SearchAgents), unnested and grouped.
func (db *DB) TagFacets(ctx context.Context, q store.SearchQuery, limit int) ([]store.TagCount, error) {
	if unmatchable(q.Owner) || slices.ContainsFunc(q.Tags, unmatchable) || slices.ContainsFunc(q.Statuses, unmatchable) || slices.ContainsFunc(q.Health, unmatchable) {
		return []store.TagCount{}, nil
	}
	var b sqlBuilder
	var where []string
	switch st := statusFilter(q.Statuses); len(st) {
	case 0:
		where = append(where, "a.visible")
	default:
		where = append(where, "NOT a.tombstone", "a.status = ANY("+b.arg(st)+")")
	}
	if tags := dedupe(q.Tags); len(tags) > 0 {
		where = append(where, "a.tags @> "+b.arg(tags)+"::text[]")
	}
	if hs := dedupe(q.Health); len(hs) > 0 {
		where = append(where, "a.health_state = ANY("+b.arg(hs)+")")
	}
	if q.Owner != "" {
		where = append(where, "a.owner = "+b.arg(q.Owner))
	}
	if terms := store.SearchTerms(q.Q); len(terms) > 0 {
		where = append(where, "a.search @@ to_tsquery('simple', "+b.arg(tsQuery(terms))+")")
	}
	sql := `-- name: tag_facets
SELECT t.tag, count(*) AS n
FROM agents a CROSS JOIN LATERAL unnest(a.tags) AS t(tag)
WHERE ` + strings.Join(where, " AND ") + `
GROUP BY t.tag
ORDER BY n DESC, t.tag COLLATE "C"
LIMIT ` + b.arg(store.NormalizeLimit(limit))
	rows, err := db.q.Query(ctx, sql, b.args...)
	if err != nil {
		return nil, dbErr("tag facets", err)
	}
	defer rows.Close()
	out := []store.TagCount{}
	for rows.Next() {
		var tc store.TagCount
		if err := rows.Scan(&tc.Tag, &tc.Count); err != nil {
			return nil, dbErr("tag facets", err)
		}
		out = append(out, tc)
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr("tag facets", err)
	}
	return out, nil
}
