package sqlite

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestEvictionPlans keeps the eviction cheap at a million listings: it
// walks the partial indexes of what may be evicted (migration 0010) and
// probes nodes (and, weighing evidence, node_evidence) by primary key, and the prune walks agent_changes_gone;
// no step scans agents, nodes or agent_changes.
func TestEvictionPlans(t *testing.T) {
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
		{"evict_listings", evictListingsSQL, []any{10, 1024, 10, 0}, []string{
			"SEARCH agents USING INTEGER PRIMARY KEY (rowid=?)",
			"SCAN agents USING COVERING INDEX agents_evict_stale",
			"SCAN agents USING COVERING INDEX agents_evict_gone",
			"SEARCH n USING COVERING INDEX sqlite_autoindex_nodes_1 (peer_id=?)",
		}},
		{"evict_listings weighing evidence", evictListingsSQL, []any{10, 1024, 1024, 1}, []string{
			"SEARCH e USING PRIMARY KEY (peer_id=?)",
		}},
		{"prune_gone_changes", pruneGoneSQL, nil, []string{
			"SEARCH agent_changes USING COVERING INDEX agent_changes_gone (gone_at<?)",
		}},
	} {
		plan := explainPlan(t, db, c.what, c.query, c.args...)
		text := strings.Join(plan, "; ")
		for _, w := range c.want {
			found := false
			for _, step := range plan {
				found = found || strings.HasPrefix(step, w)
			}
			if !found {
				t.Errorf("%s: plan has no step %q:\n%s", c.what, w, text)
			}
		}
		for _, step := range plan {
			if (strings.HasPrefix(step, "SCAN agents") && !strings.Contains(step, "INDEX agents_evict_")) ||
				strings.HasPrefix(step, "SCAN agent_changes") || strings.HasPrefix(step, "SCAN n") || strings.HasPrefix(step, "SCAN nodes") {
				t.Errorf("%s: plan scans a table:\n%s", c.what, text)
			}
		}
	}
}
