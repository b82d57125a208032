package sqlite

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

// TestQueryPlans keeps the searches index-driven: each must walk an index
// (or FTS5) in page order and stop at LIMIT, never scan agents or sort. On an
// empty database SQLite plans without statistics, as it does on a fresh
// node; Close's PRAGMA optimize only adds statistics that help.
func TestQueryPlans(t *testing.T) {
	db, err := Open(t.Context(), filepath.Join(t.TempDir(), "plans.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	queries := []store.SearchQuery{
		{},
		{Health: []string{agent.HealthHealthy}},
		{Health: []string{agent.HealthFailing}},
		{Health: []string{agent.HealthFailing, agent.HealthUnknown}, Tags: []string{"weather"}},
		{Q: "weather", Health: []string{agent.HealthFailing, agent.HealthDegraded}},
		{Statuses: []string{store.StatusOffline}},
		{Tags: []string{"weather"}},
		{Tags: []string{"weather", "go"}},
		{Owner: "alice"},
		{Owner: "alice", Tags: []string{"weather"}},
		{Q: "weather"},
		{Q: "weather forecast", Tags: []string{"go"}, Owner: "alice", Statuses: []string{store.StatusOnline}},
	}
	type explained struct {
		what, query string
		args        []any
		// wantDriver is what the plan must walk first.
		wantDriver string
		// subquery, if set, is the one scan allowed after the driver: a
		// list subquery SQLite runs once per statement (tier 3's matches
		// of agents_fts_head, a short doclist).
		subquery string
	}
	var all []explained
	// A cursor in each pass: among the agents that are not failing, among
	// the failing ones, and in a tier's second status pass.
	cursors := []store.Cursor{{Rank: 2, Pos: 1000}, {Rank: 2, Pos: 1000, Failing: true}, {Rank: 2, Pos: 1000, Stale: true}}
	for _, q := range queries {
		for _, c := range []int{-1, 0, 1, 2} {
			hasCursor := c >= 0
			var cur store.Cursor
			if hasCursor {
				cur = cursors[c]
			}
			terms := store.SearchTerms(q.Q)
			if len(terms) == 0 {
				for _, p := range newestQueries(q, listingColumns, cur, hasCursor) {
					p.args[len(p.args)-1] = 21
					driver := "SCAN a" // the rowid, backwards: no sort below
					if hasCursor && p.failing == cur.Failing {
						driver = "SEARCH a USING INTEGER PRIMARY KEY (rowid<?)"
					}
					switch {
					case len(q.Tags) > 0:
						driver = "SEARCH t0 USING PRIMARY KEY"
					case q.Owner != "":
						driver = "SEARCH a USING INDEX agents_owner"
					case p.failing:
						driver = "SCAN a USING INDEX agents_failing"
						if hasCursor && p.failing == cur.Failing {
							driver = "SEARCH a USING INDEX agents_failing (pos<?)"
						}
					}
					all = append(all, explained{what: fmt.Sprintf("newest %s pass failing=%v cursor %+v", describe(q, hasCursor), p.failing, cur), query: p.query, args: p.args, wantDriver: driver})
				}
				continue
			}
			for _, order := range [][]tier{tiers, newestTier} {
				for _, tq := range tierQueries(q, listingColumns, terms, order, cur, hasCursor) {
					tq.args[len(tq.args)-1] = 21
					// Each tier walks its own FTS5 table (tiers), newest first.
					e := explained{what: fmt.Sprintf("text %s pass failing=%v tier %v cursor %+v", describe(q, hasCursor), tq.failing, tq.rank, cur),
						query: tq.query, args: tq.args, wantDriver: "SCAN agents_fts VIRTUAL TABLE"}
					switch tq.rank {
					case 1:
						e.wantDriver = "SCAN agents_fts_title VIRTUAL TABLE"
					case 2:
						e.wantDriver = "SCAN agents_fts_head VIRTUAL TABLE"
					case notHeadTier:
						e.subquery = "SCAN agents_fts_head VIRTUAL TABLE"
					}
					all = append(all, e)
				}
			}
		}
	}
	// SetHealth walks the heartbeat's entries and finds each agent by id.
	all = append(all, explained{what: "set_health", query: setHealthSQL, args: []any{"host", "[]"}, wantDriver: "SCAN json_each VIRTUAL TABLE"})
	for _, e := range all {
		plan := explainPlan(t, db, e.what, e.query, e.args...)
		text := strings.Join(plan, "; ")
		if len(plan) == 0 || !strings.HasPrefix(first(plan), e.wantDriver) {
			t.Errorf("%s: plan starts %q, want %q\n%s", e.what, first(plan), e.wantDriver, text)
		}
		if strings.Contains(text, "TEMP B-TREE") {
			t.Errorf("%s: plan sorts instead of walking in page order:\n%s", e.what, text)
		}
		// agents is only ever searched by key or index after the driver; the
		// only other scan is the expected list subquery, once.
		subqueries := 0
		for i, step := range plan[1:] {
			if e.subquery != "" && strings.HasPrefix(plan[i], "LIST SUBQUERY ") && strings.HasPrefix(step, e.subquery) {
				subqueries++
				continue
			}
			if strings.HasPrefix(step, "SCAN ") {
				t.Errorf("%s: plan scans after its driver:\n%s", e.what, text)
			}
		}
		if e.subquery != "" && subqueries != 1 {
			t.Errorf("%s: plan has %d list subqueries walking %q, want 1:\n%s", e.what, subqueries, e.subquery, text)
		}
	}
}

func describe(q store.SearchQuery, hasCursor bool) string {
	s := strings.TrimSpace(strings.Join([]string{q.Q, strings.Join(q.Tags, "+"), q.Owner, strings.Join(q.Statuses, "+"), strings.Join(q.Health, "+")}, " "))
	if hasCursor {
		s += " (cursor)"
	}
	return "[" + s + "]"
}

func first(xs []string) string {
	if len(xs) == 0 {
		return ""
	}
	return xs[0]
}

// TestChangeFeedPlans keeps the change feed's reads index-driven:
// ListingChanges walks agent_changes_seq from after (and probes it for
// each number of also), never scanning agent_changes or agents, so it
// sorts at most limit + len(also) rows; ListingsAt looks each position up
// by rowid.
func TestChangeFeedPlans(t *testing.T) {
	db, err := Open(t.Context(), filepath.Join(t.TempDir(), "plans.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, c := range []struct {
		what, query string
		args        []any
		want        []string
	}{
		{"listing_changes", listingChangesSQL, []any{5, "[1, 2]", 100}, []string{
			"SEARCH agent_changes USING COVERING INDEX agent_changes_seq (change_seq>?)",
			"SEARCH agent_changes USING COVERING INDEX agent_changes_seq (change_seq=?)",
			"SEARCH a USING INTEGER PRIMARY KEY (rowid=?)",
		}},
		{"listings_at", listingsAtSQL, []any{"[1, 2]"}, []string{
			"SEARCH a USING INTEGER PRIMARY KEY (rowid=?)",
			"SEARCH c USING INTEGER PRIMARY KEY (rowid=?)",
		}},
		{"listings_at public", listingsAtPublicSQL, []any{"[1, 2]"}, []string{
			"SEARCH a USING INTEGER PRIMARY KEY (rowid=?)",
			"SEARCH c USING INTEGER PRIMARY KEY (rowid=?)",
		}},
	} {
		plan := explainPlan(t, db, c.what, c.query, c.args...)
		text := strings.Join(plan, "; ")
		for _, w := range c.want {
			if !slices.ContainsFunc(plan, func(step string) bool { return strings.HasPrefix(step, w) }) {
				t.Errorf("%s: plan has no step %q:\n%s", c.what, w, text)
			}
		}
		for _, step := range plan {
			// (listing_changes scans c, its UNION's co-routine, of at
			// most limit + len(also) rows.)
			if strings.HasPrefix(step, "SCAN a") || strings.HasPrefix(step, "SCAN agent_changes") {
				t.Errorf("%s: plan scans a table:\n%s", c.what, text)
			}
		}
	}
}

// explainPlan is the detail column of EXPLAIN QUERY PLAN of query, a step
// a line.
func explainPlan(t *testing.T, db *DB, what, query string, args ...any) []string {
	t.Helper()
	rows, err := db.read.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		t.Fatalf("%s: explain: %v", what, err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notUsed int
		var detail string
		if err := rows.Scan(&id, &parent, &notUsed, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: explain: %v", what, err)
	}
	return plan
}
