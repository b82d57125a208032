package postgres

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

// SearchAgents implements store.Catalogue. The SQL text is assembled only from
// constant fragments; every value (terms, tags, statuses, health, owner,
// cursor) is a bind parameter.
//
// A search walks the agents that are not failing, then the failing ones
// (docs/architecture.md "Agent health"). Each of those two passes is one statement: a
// UNION ALL of its relevance tiers (tiers; one branch without text or
// newest first), each tier split in its status passes (online first,
// store.StatusPasses), each branch newest first and stopping at the page
// size, under a LIMIT, so Postgres runs the branches in order and stops
// starting new ones once the page is full. That is store/sqlite's order
// too. The failing
// pass runs only when the first left the page short and some listing is
// failing (agents_failing, a partial index: one probe): a six-branch
// statement cost ~60 % more per search than the three branches that fill
// almost every page (pgbench, generic plans, 10k listings), though the
// failing branches never ran.
//
// Plans (EXPLAIN ANALYZE at 100k listings, see bench_test.go): each tier
// is either a backward walk of agents_visible_health_pos (default
// statuses) or agents_status_health_pos (explicit statuses) that checks
// the tier's match on each row and stops after a page (a common word), or
// a bitmap scan of the tier's GIN index and a top-N sort by pos (a rare
// one); the planner picks with the lexeme statistics of each tsvector
// column. Tags are one containment filter (tags @> ...). Before migration
// 0004 every match was ranked with ts_rank: a word in a fifth of 100k
// listings cost 30-40 ms however few rows the page needed.
func (db *DB) SearchAgents(ctx context.Context, q store.SearchQuery) (store.SearchPage, error) {
	cur, hasCursor, err := store.DecodeCursor(q.Cursor)
	if err != nil {
		return store.SearchPage{}, fmt.Errorf("postgres: search agents: %w", err)
	}
	limit := store.NormalizeLimit(q.Limit)
	terms := store.SearchTerms(q.Q)
	if q.Sort == store.SortName || q.Sort == store.SortUsed {
		var b sqlBuilder
		where, ok := b.filters(q)
		if !ok {
			return store.SearchPage{Listings: []store.Listing{}}, nil
		}
		return db.searchByName(ctx, &b, where, terms, cur, hasCursor, limit, q.Sort == store.SortUsed)
	}
	var hits []searchHit
	for i, failing := range store.HealthPasses(q.Health) {
		if hasCursor && cur.Failing && !failing {
			continue
		}
		need := limit + 1 - len(hits)
		if need <= 0 {
			break
		}
		if failing && i > 0 {
			// After a short first pass: most catalogues have no failing
			// listing to add.
			var any bool
			if err := db.q.QueryRow(ctx, anyFailingSQL).Scan(&any); err != nil {
				return store.SearchPage{}, dbErr("search agents", err)
			}
			if !any {
				break
			}
		}
		sql, args, ok := passSQL(q, terms, failing, hasCursor, cur, need)
		if !ok {
			continue // nothing in this pass can match
		}
		if hits, err = db.collectHits(ctx, hits, sql, db.searchArgs(ctx, args)); err != nil {
			return store.SearchPage{}, err
		}
	}
	// Page order: not failing first, then by tier, online first, then
	// newest first.
	slices.SortFunc(hits, func(x, y searchHit) int {
		if c := cmpBool(x.failing, y.failing); c != 0 {
			return c
		}
		if x.rank != y.rank {
			return cmp.Compare(x.rank, y.rank)
		}
		if c := cmpBool(x.stale, y.stale); c != 0 {
			return c
		}
		return cmp.Compare(y.pos, x.pos)
	})
	page := store.SearchPage{Listings: make([]store.Listing, 0, min(len(hits), limit))}
	for i, h := range hits {
		if i == limit {
			last := hits[i-1]
			page.NextCursor = store.EncodeCursor(store.Cursor{Rank: last.rank, Pos: last.pos, Failing: last.failing, Stale: last.stale})
			break
		}
		page.Listings = append(page.Listings, h.l)
	}
	return page, nil
}

// anyFailingSQL tells whether any listing is failing: one probe of the
// partial index agents_failing (migration 0005).
const anyFailingSQL = `-- name: any_failing
SELECT EXISTS (SELECT 1 FROM agents WHERE health_state = 'failing')`

// searchHit is one row of a search pass, with its place in the page order.
type searchHit struct {
	l       store.Listing
	pos     int64
	failing bool
	rank    float64
	stale   bool
}

// cmpBool orders false before true.
func cmpBool(x, y bool) int {
	switch {
	case x == y:
		return 0
	case x:
		return 1
	}
	return -1
}

// passSQL is the statement of one health pass of a search (failing or
// not): its tiers, each in its status passes, as a UNION ALL under a LIMIT
// of need rows, from the cursor's place on (with hasCursor). ok is false
// when the pass cannot match anything: a filter value that no row can
// hold, or a cursor past its tiers.
func passSQL(q store.SearchQuery, terms []string, failing, hasCursor bool, cur store.Cursor, need int) (sql string, args []any, ok bool) {
	var b sqlBuilder
	where, ok := b.otherFilters(q)
	if !ok {
		return "", nil, false
	}
	order := []tier{{0, ""}}
	if len(terms) > 0 {
		query := "to_tsquery('simple', " + b.arg(tsQuery(terms)) + ")"
		order = textTiers(query)
		if q.Sort == store.SortNewest {
			order = []tier{{0, "a.search @@ " + query}}
		}
	}
	limitArg := b.arg(need)
	health := notFailing
	if failing {
		health = "NOT " + notFailing
	}
	var branches []string
	for _, t := range order {
		statusPasses := []store.StatusPass{{Statuses: q.Statuses}} // the statuses asked for, as one pass
		if t.rank > 0 {
			statusPasses = store.StatusPasses(q.Statuses)
		}
		for _, sp := range statusPasses {
			before, atCursor := false, false
			if hasCursor {
				before, atCursor = cur.Place(failing, t.rank, sp.Stale)
			}
			if before {
				continue
			}
			w := append(b.statusWhere(sp.Statuses), where...)
			w = append(w, health)
			if t.match != "" {
				w = append(w, t.match)
			}
			if atCursor {
				w = append(w, "a.pos < "+b.arg(cur.Pos))
			}
			branches = append(branches, `(SELECT `+agentColumns+`, `+strconv.FormatBool(failing)+` AS failing, `+strconv.Itoa(int(t.rank))+`::float8 AS rank, `+strconv.FormatBool(sp.Stale)+` AS stale
	FROM agents a
	WHERE `+strings.Join(w, " AND ")+`
	ORDER BY a.pos DESC
	LIMIT `+limitArg+`)`)
		}
	}
	if len(branches) == 0 {
		return "", nil, false
	}
	columns := listingColumns
	if q.PublicOnly {
		columns = publicColumns
	}
	// The tiers pick the page on the narrow agents table; only those rows
	// are then joined with agent_records. Postgres runs the branches of a
	// UNION ALL in order under the LIMIT; the rows are put in page order
	// again by the caller, as the join does not keep it.
	return `-- name: search_agents
SELECT ` + columns + `, r.public_json, a.failing, a.rank, a.stale
FROM (SELECT * FROM (
` + strings.Join(branches, "\nUNION ALL\n") + `
) AS p LIMIT ` + limitArg + `) AS a
	JOIN agent_records r ON r.id = a.id`, b.args, true
}

// collectHits runs one pass and appends its rows to hits. A listing
// already there (its health changed between the two passes' statements)
// is not added twice.
func (db *DB) collectHits(ctx context.Context, hits []searchHit, sql string, args []any) ([]searchHit, error) {
	rows, err := db.q.Query(ctx, sql, args...)
	if err != nil {
		return nil, dbErr("search agents", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			h      searchHit
			public []byte
		)
		if h.l, h.pos, err = scanListing(rows, &public, &h.failing, &h.rank, &h.stale); err != nil {
			return nil, dbErr("search agents", err)
		}
		if err := h.l.SetPublicJSON(public); err != nil {
			return nil, fmt.Errorf("postgres: search agents: %w", err)
		}
		if !slices.ContainsFunc(hits, func(x searchHit) bool { return x.l.Record.ID == h.l.Record.ID }) {
			hits = append(hits, h)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr("search agents", err)
	}
	return hits, nil
}

// tier is one relevance tier of a text search: its rank (1 is the best;
// 0 for the single pass without text or newest first) and its match.
type tier struct {
	rank  float64
	match string
}

// textTiers are the relevance tiers of a text search for the tsquery
// expression query, best first; within a tier, newest first. A listing's
// tier depends only on its own text, so the (tier, pos) keyset stays exact
// while listings arrive. They are store/sqlite's tiers: every term in the
// name or display name; every term in those or the tags; every term
// anywhere (the description and skills too).
func textTiers(query string) []tier {
	return []tier{
		{1, "a.search_title @@ " + query},
		{2, "a.search_head @@ " + query + " AND NOT a.search_title @@ " + query},
		{3, "a.search @@ " + query + " AND NOT a.search_head @@ " + query},
	}
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
	return tagCounts(rows, "list tags")
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
// other filters, their arguments in b. byUses makes it store.SortUsed:
// the week's uses, most first, then newest first (a.pos descending).
func (db *DB) searchByName(ctx context.Context, b *sqlBuilder, where []string, terms []string, cur store.Cursor, hasCursor bool, limit int, byUses bool) (store.SearchPage, error) {
	if len(terms) > 0 {
		where = append(where, "a.search @@ to_tsquery('simple', "+b.arg(tsQuery(terms))+")")
	}
	key, order, name := nameKey, nameKey+", a.pos", "search_agents_by_name"
	if byUses {
		key, order, name = "a.health_uses_7d::text", "a.health_uses_7d DESC, a.pos DESC", "search_agents_by_uses"
	}
	if hasCursor {
		var after string
		if byUses {
			k, p := b.arg(cur.Uses)+"::int", b.arg(cur.Pos)+"::bigint"
			after = "(a.health_uses_7d < " + k + " OR (a.health_uses_7d = " + k + " AND a.pos < " + p + "))"
		} else {
			k, p := b.arg(cur.Name)+"::text", b.arg(cur.Pos)+"::bigint"
			after = "(" + nameKey + " > " + k + " OR (" + nameKey + " = " + k + " AND a.pos > " + p + "))"
		}
		if cur.Failing {
			where = append(where, "NOT "+notFailing, after)
		} else {
			where = append(where, "(NOT "+notFailing+" OR "+after+")")
		}
	}
	sql := `-- name: ` + name + `
SELECT ` + listingColumns + `, ` + key + `, r.public_json
FROM ` + listingFrom + `
WHERE ` + strings.Join(where, " AND ") + `
ORDER BY ` + notFailing + ` DESC, ` + order + `
LIMIT ` + b.arg(limit+1)
	rows, err := db.q.Query(ctx, sql, db.searchArgs(ctx, b.args)...)
	if err != nil {
		return store.SearchPage{}, dbErr("search agents", err)
	}
	defer rows.Close()
	page := store.SearchPage{Listings: make([]store.Listing, 0, limit)}
	var next store.Cursor
	for rows.Next() {
		var (
			key    string
			public []byte
		)
		l, pos, err := scanListing(rows, &key, &public)
		if err != nil {
			return store.SearchPage{}, dbErr("search agents", err)
		}
		if err := l.SetPublicJSON(public); err != nil {
			return store.SearchPage{}, fmt.Errorf("postgres: search agents: %w", err)
		}
		if len(page.Listings) == limit {
			page.NextCursor = store.EncodeCursor(next)
			break
		}
		page.Listings = append(page.Listings, l)
		next = store.Cursor{Pos: pos, Name: key, Failing: l.Health.State == agent.HealthFailing}
		if byUses {
			next.Name, next.Uses = "", int64(l.Health.Uses7d)
		}
	}
	if err := rows.Err(); err != nil {
		return store.SearchPage{}, dbErr("search agents", err)
	}
	return page, nil
}

// TagFacets implements store.Catalogue: the tags of the matching rows of
// agents (the filters of SearchAgents), unnested and grouped.
func (db *DB) TagFacets(ctx context.Context, q store.SearchQuery, limit int) ([]store.TagCount, error) {
	var b sqlBuilder
	where, ok := b.matchWhere(q)
	if !ok {
		return []store.TagCount{}, nil
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
	return tagCounts(rows, "tag facets")
}

// tagCounts reads (tag, count) rows and closes them; op names the read in
// errors.
func tagCounts(rows pgx.Rows, op string) ([]store.TagCount, error) {
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

// customPlanRows is the catalogue size from which a search is planned for
// its own values. pgx prepares every statement, and Postgres then reuses a
// generic plan of the tier passes, which scans each tier's GIN index and
// sorts every match whatever the word: fine at 10k listings (658 req/s in
// the distinct-query run), 28 req/s at 100k. Planned for the word, a common
// one walks the pos index and stops after a page (110 req/s at 100k), but
// planning costs 10-18 ms, too much for a small catalogue (237 req/s at
// 10k). BENCHMARKS "Distinct-query search".
const customPlanRows = 50_000

// catalogueSize is the planner's estimate of the agents table's rows,
// read at most once a minute.
type catalogueSize struct {
	checked atomic.Int64 // unix nanoseconds of the last read
	big     atomic.Bool  // at least customPlanRows
}

// searchArgs are a search statement's arguments, with the query mode that
// makes Postgres plan it for these values when the catalogue is big.
func (db *DB) searchArgs(ctx context.Context, args []any) []any {
	now := time.Now().UnixNano()
	if last := db.size.checked.Load(); now-last > int64(time.Minute) && db.size.checked.CompareAndSwap(last, now) {
		var rows float64
		if err := db.q.QueryRow(ctx, `-- name: catalogue_size
SELECT reltuples FROM pg_class WHERE oid = 'agents'::regclass`).Scan(&rows); err == nil {
			db.size.big.Store(rows >= customPlanRows)
		}
	}
	if db.size.big.Load() {
		return append([]any{pgx.QueryExecModeDescribeExec}, args...)
	}
	return args
}

// filters are the conditions on agents a of a search's filters (statuses,
// tags, health, owner; not the text), shared by SearchAgents and
// TagFacets. ok is false when a value cannot match anything.
func (b *sqlBuilder) filters(q store.SearchQuery) (where []string, ok bool) {
	rest, ok := b.otherFilters(q)
	if !ok {
		return nil, false
	}
	return append(b.statusWhere(q.Statuses), rest...), true
}

// statusWhere is the condition of filters on statuses.
func (b *sqlBuilder) statusWhere(statuses []string) []string {
	switch statuses := statusFilter(statuses); len(statuses) {
	case 0:
		return []string{"a.visible"}
	case 1:
		return []string{"NOT a.tombstone", "a.status = " + b.arg(statuses[0])}
	default:
		return []string{"NOT a.tombstone", "a.status = ANY(" + b.arg(statuses) + ")"}
	}
}

// otherFilters are filters but the statuses (each status of q checked
// for being matchable, though).
func (b *sqlBuilder) otherFilters(q store.SearchQuery) (where []string, ok bool) {
	if unmatchable(q.Owner) || slices.ContainsFunc(q.Tags, unmatchable) || slices.ContainsFunc(q.Statuses, unmatchable) || slices.ContainsFunc(q.Health, unmatchable) || slices.ContainsFunc(q.Publishers, unmatchable) {
		return nil, false
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
	if ps := dedupe(q.Publishers); len(ps) > 0 {
		where = append(where, "a.id IN (SELECT r.id FROM agent_records r WHERE r.publisher = ANY("+b.arg(ps)+"))")
	}
	return where, true
}
