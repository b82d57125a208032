package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/agentsite/agentsite/store"
)

var _ store.PageWriter = batchTx{}

// UpsertRecords implements store.PageWriter: a page of listings in one
// statement (upsertPageSQL), where UpsertRecord takes two per listing (the
// listing, then its tags), each a trip through the parser, the executor
// and a round trip of its own. Each row is written as UpsertRecord writes
// it: the same seq rule (a stale row changes nothing and is not
// returned), the same values, the same row triggers (the change feed and
// the sync feed number each row, in the page's order), first-seen order
// (pos) in the page's order.
func (t batchTx) UpsertRecords(ctx context.Context, ls []store.Listing) ([]bool, error) {
	return upsertRecords(ctx, t.b, ls)
}

// maxPageRows bounds the rows of one statement: pageColumns parameters
// each, far below the protocol's 65,535.
const maxPageRows = 256

// pageColumns is the number of parameters of a row of upsertPageSQL.
const pageColumns = 21

// pageRowTypes are the types of a row's parameters, in the order of
// upsertRecord's arguments (and of upsertAgentSQL's $1..$21).
var pageRowTypes = [pageColumns]string{
	"text", "bigint", "boolean", "text", "boolean", "text", "text", "text[]",
	"timestamptz", "timestamptz", "timestamptz",
	"text", "text", "text", "jsonb", "jsonb", "text", "text", "timestamptz", "bytea", "bytea",
}

// upsertPageSQL is upsertAgentSQL and rewriteTagsSQL for the n rows of
// input, in one statement, built from their fragments (insertAgents,
// onConflictAgents, insertRecords, onConflictRecords, insertTags,
// onConflictTags): the rows that pass the seq rule (up) get their
// record (rec) and their tags (dropped, tagged: disjoint rows of
// agent_tags, as in rewriteTagsSQL). It returns the id of each row
// written. dropped finds the page's rows of agent_tags through its key
// (agent_id = ANY of the ids written): joined to up alone, the planner
// took a hash join over a scan of all of agent_tags whenever it had no
// statistics of it (a store filling from empty, autovacuum not yet by,
// or off), every page reading every tag row. The rows are inserted in input's order (ord), so that pos, and
// the numbers the row triggers give, follow the page.
func upsertPageSQL(n int) string {
	var b strings.Builder
	b.WriteString(`-- name: upsert_records
WITH input (ord, id, seq, tombstone, status, local, owner, host_peer_id, tags,
	expires_at, last_seen, updated_at,
	name, display_name, description, skills, endpoints, version, publisher, issued_at, envelope, public_json) AS (
	VALUES `)
	for i := range n {
		if i > 0 {
			b.WriteString(",\n\t")
		}
		b.WriteString("(")
		b.WriteString(strconv.Itoa(i))
		for c, typ := range pageRowTypes {
			b.WriteString(", $")
			b.WriteString(strconv.Itoa(i*pageColumns + c + 1))
			b.WriteString("::")
			b.WriteString(typ)
		}
		b.WriteString(")")
	}
	b.WriteString(`
), up AS (
	` + insertAgents + `
	SELECT id, seq, tombstone, status, local, owner, host_peer_id, tags, expires_at, last_seen, updated_at,
		agent_search_vector(name, display_name, tags, description, skills),
		to_tsvector('simple'::regconfig, name || ' ' || display_name),
		to_tsvector('simple'::regconfig, name || ' ' || display_name)
			|| to_tsvector('simple'::regconfig, coalesce(array_to_string(tags, ' '), ''))
	FROM input ORDER BY ord
	` + onConflictAgents + `
), rec AS (
	` + insertRecords + `
	SELECT i.id, i.name, i.display_name, i.description, i.skills, i.endpoints,
		i.version, i.publisher, i.issued_at, i.envelope, i.public_json
	FROM up JOIN input i ON i.id = up.id ORDER BY i.ord
	` + onConflictRecords + `
), dropped AS (
	DELETE FROM agent_tags t USING up JOIN input i ON i.id = up.id
	WHERE t.agent_id = ANY (ARRAY(SELECT id FROM up)) AND t.agent_id = up.id
		AND t.tag <> ALL (coalesce(i.tags, '{}'::text[]))
), tagged AS (
	` + insertTags + `
	SELECT DISTINCT up.id, g.tag, up.visible FROM up JOIN input i ON i.id = up.id, unnest(i.tags) AS g (tag)
	` + onConflictTags + `
)
SELECT id FROM up`)
	return b.String()
}

// upsertRecords writes ls (distinct ids) maxPageRows at a time through
// ex; changed[i] is whether ls[i] was written (not stale).
func upsertRecords(ctx context.Context, ex executor, ls []store.Listing) ([]bool, error) {
	changed := make([]bool, len(ls))
	for from := 0; from < len(ls); from += maxPageRows {
		to := min(from+maxPageRows, len(ls))
		if err := upsertPage(ctx, ex, ls[from:to], changed[from:to]); err != nil {
			return nil, err
		}
	}
	return changed, nil
}

// upsertPage writes ls, setting changed[i] when ls[i] was written.
func upsertPage(ctx context.Context, ex executor, ls []store.Listing, changed []bool) error {
	index := make(map[string]int, len(ls))
	// An unnamed statement, planned for each page: a prepared one is
	// planned generically after five runs, for the tables as they are
	// then. A store filled from empty kept the plan made when agent_tags
	// was small, the rewrite of the tags (dropped) a hash join over a
	// scan of all of agent_tags, for every page: at 350k listings a page
	// read 850k rows of it, and a 1M seed slowed as it grew. Planned with
	// the tables' sizes of the moment it probes agent_tags' key, 256
	// times. (Parsing and planning the statement is small beside its
	// writes.)
	args := make([]any, 1, 1+pageColumns*len(ls))
	args[0] = pgx.QueryExecModeDescribeExec
	for i := range ls {
		l := &ls[i]
		r := &l.Record
		if _, dup := index[r.ID]; dup {
			return fmt.Errorf("postgres: upsert agents: agent %s twice in one page", r.ID)
		}
		index[r.ID] = i
		row, err := agentArgs(l)
		if err != nil {
			return err
		}
		args = append(args, row...)
	}
	return ex.atomic(ctx, func(ctx context.Context, q querier) error {
		rows, err := q.Query(ctx, upsertPageSQL(len(ls)), args...)
		if err != nil {
			return dbErr("upsert agents", err)
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				return dbErr("upsert agents", err)
			}
			i, ok := index[id]
			if !ok {
				return fmt.Errorf("postgres: upsert agents: row %s was not asked for", id)
			}
			changed[i] = true
		}
		rows.Close()
		return dbErr("upsert agents", rows.Err())
	})
}
