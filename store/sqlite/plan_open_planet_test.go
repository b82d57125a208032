package sqlite

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenPlanetPlans keeps the statements that bound what never-heard
// peers can make this node hold index-driven, so their cost follows what
// they count or change, not the size of the catalogue: the quota counts
// from agents_publisher alone, ExpireUnheard walks the hosts and then the
// listings of those never heard in agents_host (not every stale listing,
// whose hosts may all be heard), and the
// nodes are paged along the primary key without a sort.
func TestOpenPlanetPlans(t *testing.T) {
	db, err := Open(t.Context(), filepath.Join(t.TempDir(), "plans.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, c := range []struct {
		what, query string
		args        []any
		want        string // a step of the plan
	}{
		{"has_agent", hasAgentSQL, []any{"id"}, "SEARCH agents USING COVERING INDEX sqlite_autoindex_agents_1 (id=?)"},
		{"count_published", countPublishedSQL, []any{"pub", 10}, "SEARCH agents USING COVERING INDEX agents_publisher (publisher=?)"},
		{"count_hosted", countHostedSQL, []any{"host", 10}, "SEARCH agents USING INDEX agents_host (host_peer_id=?)"},
		{"expire_unheard", expireUnheardSQL, []any{int64(1), 1000, "self"}, "SEARCH c USING INDEX agents_host (host_peer_id=?)"},
		{"list_nodes", listNodesSQL, []any{"", 101}, "SEARCH nodes USING INDEX sqlite_autoindex_nodes_1 (peer_id>?)"},
		{"list_nodes_before", listNodesBeforeSQL, []any{"z", 101}, "SEARCH nodes USING INDEX sqlite_autoindex_nodes_1 (peer_id<?)"},
	} {
		plan := explainPlan(t, db, c.what, c.query, c.args...)
		text := strings.Join(plan, "; ")
		found := false
		for _, step := range plan {
			found = found || strings.HasPrefix(step, c.want)
			if strings.HasPrefix(step, "SCAN agents") || strings.HasPrefix(step, "SCAN nodes") || strings.HasPrefix(step, "SCAN n ") {
				t.Errorf("%s: plan scans a table:\n%s", c.what, text)
			}
		}
		if !found {
			t.Errorf("%s: plan has no step %q:\n%s", c.what, c.want, text)
		}
		if strings.Contains(text, "TEMP B-TREE") {
			t.Errorf("%s: plan sorts:\n%s", c.what, text)
		}
	}
}

// TestExpireUnheardStatementIsBounded: one statement of ExpireUnheard
// turns at most its limit offline (at 1M never-heard listings a single
// statement for all ran past the store deadline every sweep).
func TestExpireUnheardStatementIsBounded(t *testing.T) {
	db, err := Open(t.Context(), filepath.Join(t.TempDir(), "bounded.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i := range 3 {
		if _, err := db.w.ExecContext(t.Context(), `INSERT INTO agents (id, name, publisher, host_peer_id, status, local, last_seen, expires_at, seq, issued_at, envelope)
VALUES (?1, ?1, 'p', 'h', 'stale', 0, 1, 9e18, 1, 1, x'00')`, fmt.Sprintf("id-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	res, err := db.w.ExecContext(t.Context(), expireUnheardSQL, int64(2), 2, "self")
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 2 {
		t.Errorf("one statement with limit 2 expired %d of 3", n)
	}
}
