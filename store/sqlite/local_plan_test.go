package sqlite

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestLocalRefsPlan: a page of the walk of the hosted listings by id walks
// agents_local_id from the cursor and stops at LIMIT, on a fresh database
// and on one with statistics (ANALYZE, as PRAGMA optimize writes them).
// Before, the planner took agents_local and sorted every hosted row for
// each page: at 100k hosted agents a page missed the store deadline.
func TestLocalRefsPlan(t *testing.T) {
	db, err := Open(t.Context(), filepath.Join(t.TempDir(), "plans.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, stats := range []bool{false, true} {
		if stats {
			if _, err := db.w.ExecContext(t.Context(), "ANALYZE"); err != nil {
				t.Fatal(err)
			}
		}
		plan := explainPlan(t, db, "local refs", localIDSQL, "agent-1", 1000)
		if !strings.Contains(plan[0], "agents_local_id (id>?)") || slices.ContainsFunc(plan, func(s string) bool {
			return strings.Contains(s, "TEMP B-TREE") || strings.HasPrefix(s, "SCAN a")
		}) {
			t.Fatalf("statistics %v: local refs plan %q; want a walk of agents_local_id from the cursor, no sort", stats, plan)
		}
	}
}
