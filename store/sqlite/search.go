package sqlite

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/agentsite/agentsite/store"
)

// Relevance tiers of a text search, best first. A listing's tier depends on
// its own text and the query only, never on the rest of the table, so the
// (tier, pos) keyset stays exact while the network adds listings. FTS5's
// bm25 was measured and rejected: its IDF and average-length terms move with
// every insert, and a walk over pages then repeated and skipped listings
// (storetest's PaginateWhileInsertingByRelevance fails with it); it also
// scores every match: 50 ms for a word in a fifth of 100k listings, where a
// tier is an FTS5 walk in rowid order that stops at the page size (1.7 ms for
// the whole page; go test -bench on a 2-vCPU Xeon, see bench_test.go).
//
// Within a tier, newest first. The tiers roughly follow the weights of
// store/postgres (name A, tags B, description and skills C).
//
// Each tier walks the smallest full-text index that answers it (migration
// 0005): agents_fts_title holds the name and display name, agents_fts_head
// those and the tags, agents_fts every column. A column filter on
// agents_fts (the plan before 0005) read a word's whole doclist over every
// column, and most words are in the description of many listings but the
// title of few: tiers 1 and 2 read it to the end to find little, then tier
// 3 read it twice more (its NOT). agentsite-load --mix distinct at 100k
// listings went from 232 to 456 req/s with 0005.
var tiers = []tier{
	{1, "agents_fts_title", func(all string) string { return all }},
	{2, "agents_fts_head", func(all string) string { return `(` + all + `) NOT (` + titleCols + ` : (` + all + `))` }},
	{3, "agents_fts", func(all string) string { return all }},
}

// tier is one relevance tier of a text search.
type tier struct {
	rank float64
	// table is the FTS5 table the tier walks.
	table string
	// match builds the tier's FTS5 query from all, the query matching
	// every term anywhere.
	match func(all string) string
}

// notHeadTier is the rank of the tier that excludes the matches of
// agents_fts_head (tiers 1 and 2), with a subquery SQLite evaluates once
// per statement: a short walk of agents_fts_head to its end, kept in an
// ephemeral table that each match of agents_fts is looked up in.
const notHeadTier = 3

// newestTier is a text search sorted newest first (store.SortNewest): one
// tier of every match, rank 0, so the keyset is (pass, pos) as without
// text.
var newestTier = []tier{{0, "agents_fts", func(all string) string { return all }}}

// FTS5 column filter of agents_fts_head: every term in the name or display
// name.
const titleCols = `{name display_name}`

// SearchAgents implements store.Catalogue. The SQL text is assembled only from
// constant fragments; every value is a bind parameter.
//
// A search is a plan of passes, each one query in page order that stops at
// LIMIT, run in one read transaction (one snapshot) until the page is
// full: first the agents that are not failing, then the failing ones
// (docs/architecture.md "Agent health": failing agents come last); within each, without
// text newest first, with text tier by tier (tiers), each tier's online
// listings before the others (store.StatusPasses has the whole order).
//
// Plans (pinned by plan_test.go; timings in bench_test.go): without
// text, a backward walk of the rowid (or, with a tag, of agent_tags' primary
// key for the first tag; with an owner, of agents_owner; in the failing
// pass, of the partial index agents_failing) that stops at LIMIT; with
// text, per tier, the tier's FTS5 table (tiers) in descending rowid order
// (the tier's query and the cursor evaluated inside FTS5; tier 3 also looks
// each hit up in the list of agents_fts_head's matches, built once per
// statement), each hit joined to agents by rowid for the filters, stopping
// at LIMIT. A pass only runs if the page is not full,
// so the failing pass of a large catalogue costs only on its last page.
func (db *DB) SearchAgents(ctx context.Context, q store.SearchQuery) (store.SearchPage, error) {
	cur, hasCursor, err := store.DecodeCursor(q.Cursor)
	if err != nil {
		return store.SearchPage{}, fmt.Errorf("sqlite: search agents: %w", err)
	}
	limit := store.NormalizeLimit(q.Limit)
	columns := listingColumns + ", a.public_json"
	if q.PublicOnly {
		columns = publicColumns
	}
	var plan []passQuery
	if q.Sort == store.SortName {
		plan = nameQueries(q, columns, store.SearchTerms(q.Q), cur, hasCursor)
	} else if q.Sort == store.SortUsed {
		plan = usedQueries(q, columns, store.SearchTerms(q.Q), cur, hasCursor)
	} else if terms := store.SearchTerms(q.Q); len(terms) > 0 {
		order := tiers
		if q.Sort == store.SortNewest {
			order = newestTier
		}
		plan = tierQueries(q, columns, terms, order, cur, hasCursor)
	} else {
		plan = newestQueries(q, columns, cur, hasCursor)
	}
	queries := make([]string, len(plan), len(plan)+1)
	for i, p := range plan {
		queries[i] = p.query
	}
	queries = append(queries, anyFailingSQL)
	pb := pageBuilder{limit: limit}
	err = db.inReadTx(ctx, func(ctx context.Context, tx execer) error {
		askedFailing := false
		for _, p := range plan {
			if p.failing && !askedFailing {
				// The failing pass costs a text search like the others;
				// most catalogues have no failing agent to find.
				askedFailing = true
				var n int
				if err := tx.QueryRowContext(ctx, anyFailingSQL).Scan(&n); err != nil {
					return dbErr("search agents", err)
				}
				if n == 0 {
					break
				}
			}
			// Only as many rows as the page still needs, plus one to know
			// whether there is more.
			p.args[len(p.args)-1] = limit + 1 - len(pb.page.Listings)
			if err := pb.collect(ctx, tx, p); err != nil {
				return err
			}
			if pb.page.NextCursor != "" {
				break
			}
		}
		return nil
	}, queries...)
	if err != nil {
		return store.SearchPage{}, err
	}
	return pb.page, nil
}

// anyFailingSQL tells whether any listing is failing: a look at the
// partial index agents_failing.
const anyFailingSQL = `-- name: any_failing
SELECT EXISTS (SELECT 1 FROM agents WHERE health_state = 'failing')`

// passQuery is one pass of a search: its SQL (listingColumns, in page
// order), whether it walks the failing agents, its relevance tier (0
// without text) and status pass. Its last argument is the LIMIT.
type passQuery struct {
	failing bool
	rank    float64
	// stale: the second status pass of a relevance tier
	// (store.StatusPasses).
	stale bool
	query string
	args  []any
	// byName: the query orders by nameKey and selects it after
	// listingColumns (store.SortName).
	byName bool
	// byUses: the query orders by the week's uses (store.SortUsed); the
	// cursor keeps them.
	byUses bool
}

// nameKey is the sort key of store.SortName: SQLite's lower() folds ASCII
// only, and the comparison is by bytes; the same expression orders and
// bounds the keyset.
const nameKey = `lower(a.display_name)`

// nameQueries is the plan of a search by name: each pass (not failing,
// failing) ordered by nameKey then pos, from the cursor on; a text query
// is one more filter (every term, anywhere).
func nameQueries(q store.SearchQuery, columns string, terms []string, cur store.Cursor, hasCursor bool) []passQuery {
	tags := dedupe(q.Tags)
	var plan []passQuery
	for _, failing := range store.HealthPasses(q.Health) {
		if hasCursor && cur.Failing && !failing {
			continue
		}
		var b sqlBuilder
		where := b.filters(q, tags, false, failing)
		if len(terms) > 0 {
			where = append(where, "a.pos IN (SELECT rowid FROM agents_fts WHERE agents_fts MATCH "+b.arg(ftsQuery(terms))+")")
		}
		if hasCursor && cur.Failing == failing {
			k, p := b.arg(cur.Name), b.arg(cur.Pos)
			where = append(where, "("+nameKey+" > "+k+" OR ("+nameKey+" = "+k+" AND a.pos > "+p+"))")
		}
		query := `-- name: search_agents_by_name
SELECT ` + columns + `, ` + nameKey + ` FROM agents a
WHERE ` + strings.Join(where, " AND ") + `
ORDER BY ` + nameKey + `, a.pos LIMIT ` + b.arg(0)
		plan = append(plan, passQuery{failing: failing, query: query, args: b.args, byName: true})
	}
	return plan
}

// usedQueries is the plan of a search by uses (store.SortUsed): each
// health pass in two, the used agents by agent_uses_order backwards (most
// uses, then newest first), then the others newest first, from the cursor
// on (its Uses > 0: in the first); a text query is one more filter.
func usedQueries(q store.SearchQuery, columns string, terms []string, cur store.Cursor, hasCursor bool) []passQuery {
	tags := dedupe(q.Tags)
	var plan []passQuery
	for _, failing := range store.HealthPasses(q.Health) {
		if hasCursor && cur.Failing && !failing {
			continue
		}
		at := hasCursor && cur.Failing == failing
		for _, used := range []bool{true, false} {
			if at && used && cur.Uses == 0 {
				continue
			}
			var b sqlBuilder
			where := b.filters(q, tags, false, failing)
			if len(terms) > 0 {
				where = append(where, "a.pos IN (SELECT rowid FROM agents_fts WHERE agents_fts MATCH "+b.arg(ftsQuery(terms))+")")
			}
			from, order := "agent_uses u CROSS JOIN agents a ON a.pos = u.agent_pos", "u.uses_7d DESC, u.agent_pos DESC"
			if used {
				if at {
					k, p := b.arg(cur.Uses), b.arg(cur.Pos)
					where = append(where, "(u.uses_7d < "+k+" OR (u.uses_7d = "+k+" AND u.agent_pos < "+p+"))")
				}
			} else {
				from, order = "agents a", "a.pos DESC"
				where = append(where, "NOT EXISTS (SELECT 1 FROM agent_uses u WHERE u.agent_pos = a.pos)")
				if at && cur.Uses == 0 {
					where = append(where, "a.pos < "+b.arg(cur.Pos))
				}
			}
			query := `-- name: search_agents_by_uses
SELECT ` + columns + ` FROM ` + from + `
WHERE ` + strings.Join(where, " AND ") + `
ORDER BY ` + order + ` LIMIT ` + b.arg(0)
			plan = append(plan, passQuery{failing: failing, query: query, args: b.args, byUses: true})
		}
	}
	return plan
}

// newestQueries is the plan of a search without text: each pass newest
// first, from the cursor's pass on, selecting columns.
func newestQueries(q store.SearchQuery, columns string, cur store.Cursor, hasCursor bool) []passQuery {
	tags := dedupe(q.Tags)
	var plan []passQuery
	for _, failing := range store.HealthPasses(q.Health) {
		if hasCursor && cur.Failing && !failing {
			continue
		}
		var b sqlBuilder
		from, posCol := "agents a", "a.pos"
		if len(tags) > 0 {
			// Drive the walk from the first tag's index entries, newest first.
			// CROSS JOIN: SQLite keeps this join order.
			from, posCol = "agent_tags t0 CROSS JOIN agents a ON a.pos = t0.agent_pos", "t0.agent_pos"
		}
		where := b.filters(q, tags, len(tags) > 0, failing)
		if hasCursor && cur.Failing == failing {
			where = append(where, posCol+" < "+b.arg(cur.Pos))
		}
		query := `-- name: search_agents
SELECT ` + columns + ` FROM ` + from + `
WHERE ` + strings.Join(where, " AND ") + `
ORDER BY ` + posCol + ` DESC LIMIT ` + b.arg(0)
		plan = append(plan, passQuery{failing: failing, query: query, args: b.args})
	}
	return plan
}

// tierQueries is the plan of a text search: per health pass, one query
// per tier (tiers, or newestTier) and, in a relevance tier, per status
// pass (store.StatusPasses: online first), from the cursor's pass on.
func tierQueries(q store.SearchQuery, columns string, terms []string, tiers []tier, cur store.Cursor, hasCursor bool) []passQuery {
	all := ftsQuery(terms)
	tags := dedupe(q.Tags)
	var plan []passQuery
	for _, failing := range store.HealthPasses(q.Health) {
		for _, t := range tiers {
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
				sq := q
				sq.Statuses = sp.Statuses
				var b sqlBuilder
				where := append([]string{t.table + " MATCH " + b.arg(t.match(all))}, b.filters(sq, tags, false, failing)...)
				if t.rank == notHeadTier {
					where = append(where, "agents_fts.rowid NOT IN (SELECT rowid FROM agents_fts_head WHERE agents_fts_head MATCH "+b.arg(all)+")")
				}
				if atCursor {
					where = append(where, t.table+".rowid < "+b.arg(cur.Pos))
				}
				// CROSS JOIN keeps FTS5 the driver: without statistics SQLite may
				// otherwise walk agents_owner and sort (seen with owner + cursor).
				query := `-- name: search_agents
SELECT ` + columns + `
FROM ` + t.table + ` CROSS JOIN agents a ON a.pos = ` + t.table + `.rowid
WHERE ` + strings.Join(where, " AND ") + `
ORDER BY ` + t.table + `.rowid DESC LIMIT ` + b.arg(0)
				plan = append(plan, passQuery{failing: failing, rank: t.rank, stale: sp.Stale, query: query, args: b.args})
			}
		}
	}
	return plan
}

// pageBuilder assembles a page from rows that arrive in page order.
type pageBuilder struct {
	limit int
	page  store.SearchPage
	last  store.Cursor // the position of the last listing kept
}

// collect appends the rows of p until the page holds limit listings; a row
// beyond that sets NextCursor to the last listing kept.
func (pb *pageBuilder) collect(ctx context.Context, q execer, p passQuery) error {
	rows, err := q.QueryContext(ctx, p.query, p.args...)
	if err != nil {
		return dbErr("search agents", err)
	}
	defer rows.Close()
	for rows.Next() {
		if len(pb.page.Listings) == pb.limit {
			pb.page.NextCursor = store.EncodeCursor(pb.last)
			break
		}
		var (
			public []byte
			key    string
		)
		extra := []any{&public}
		if p.byName {
			extra = append(extra, &key)
		}
		l, pos, err := scanListing(rows, extra...)
		if err != nil {
			return dbErr("search agents", err)
		}
		if err := l.SetPublicJSON(public); err != nil {
			return fmt.Errorf("sqlite: search agents: %w", err)
		}
		pb.page.Listings = append(pb.page.Listings, l)
		pb.last = store.Cursor{Rank: p.rank, Pos: pos, Name: key, Failing: p.failing, Stale: p.stale}
		if p.byUses {
			pb.last.Uses = int64(l.Health.Uses7d)
		}
	}
	if err := rows.Err(); err != nil {
		return dbErr("search agents", err)
	}
	return nil
}

// ftsQuery turns store.SearchTerms (letters and digits only, so quoting is
// safe) into an FTS5 query: every term prefix-matched, all of them required.
func ftsQuery(terms []string) string {
	parts := make([]string, len(terms))
	for i, t := range terms {
		parts[i] = `"` + t + `"*`
	}
	return strings.Join(parts, " AND ")
}

// statusFilter returns the statuses to match; empty means the default,
// online and stale.
func statusFilter(statuses []string) []string {
	if st := dedupe(statuses); len(st) > 0 {
		return st
	}
	return []string{store.StatusOnline, store.StatusStale}
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

// sqlBuilder collects bind parameters; SQLite's ?NNN placeholders let one
// value be used twice.
type sqlBuilder struct {
	args []any
}

// arg adds a bind parameter and returns its placeholder.
func (b *sqlBuilder) arg(v any) string {
	b.args = append(b.args, v)
	return fmt.Sprintf("?%d", len(b.args))
}

// list adds one parameter per value and returns "?1, ?2, ...".
func (b *sqlBuilder) list(vs []string) string {
	ph := make([]string, len(vs))
	for i, v := range vs {
		ph[i] = b.arg(v)
	}
	return strings.Join(ph, ", ")
}

// filters returns the WHERE terms of q other than text and cursor, on
// agents aliased a, for the failing pass or the other. With
// firstTagJoined, the first tag is matched on the driving agent_tags row
// t0.
func (b *sqlBuilder) filters(q store.SearchQuery, tags []string, firstTagJoined, failing bool) []string {
	where := []string{"a.tombstone = 0", "a.status IN (" + b.list(statusFilter(q.Statuses)) + ")"}
	if failing {
		where = append(where, "a.health_state = 'failing'")
	} else {
		where = append(where, "a.health_state <> 'failing'")
		if hs := dedupe(q.Health); len(hs) > 0 {
			where = append(where, "a.health_state IN ("+b.list(hs)+")")
		}
	}
	for i, tag := range tags {
		if i == 0 && firstTagJoined {
			where = append(where, "t0.tag = "+b.arg(tag))
			continue
		}
		where = append(where, "EXISTS (SELECT 1 FROM agent_tags t WHERE t.tag = "+b.arg(tag)+" AND t.agent_pos = a.pos)")
	}
	if q.Owner != "" {
		where = append(where, "a.owner = "+b.arg(q.Owner))
	}
	if ps := dedupe(q.Publishers); len(ps) > 0 {
		where = append(where, "a.publisher IN ("+b.list(ps)+")")
	}
	return where
}
