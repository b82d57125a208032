package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

// TestImportChunkStatements: a chunk of an import (registry.BatchChunk,
// 500 agents in one InBatchWhole: a backend each, then the listings at
// once) is three statements on SQLite whatever its size: the backends in
// one, the rows in one, their tags in one more after the old ones are
// deleted. A statement per backend was an eighth of an import's CPU, and
// the rows in two statements wrote the full-text terms out as two
// segments (BENCHMARKS.md, "1M catalogue").
func TestImportChunkStatements(t *testing.T) {
	ctx := t.Context()
	reg := prometheus.NewRegistry()
	db, err := OpenWith(ctx, filepath.Join(t.TempDir(), "agentsite.db"), nil, store.Options{Metrics: store.NewMetrics(reg)})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const n = 500
	now := time.Now().UTC()
	ls := make([]store.Listing, n)
	for i := range ls {
		ls[i] = store.Listing{
			Record: agent.Record{ID: fmt.Sprintf("id-%03d", i), Name: fmt.Sprintf("agent-%d", i), DisplayName: "Agent",
				Description: "An agent for weather.", Tags: []string{"weather", "travel"}, Seq: 1,
				IssuedAt: now, ExpiresAt: now.Add(time.Hour), Publisher: "pub", Owner: "op"},
			Status: store.StatusOnline, LastSeen: now, Local: true, UpdatedAt: now,
		}
	}
	err = db.InBatchWhole(ctx, func(ctx context.Context, tx store.Tx) error {
		for i, l := range ls {
			if err := tx.PutBackend(ctx, l.Record.ID, agent.Backend{Kind: agent.BackendBuiltin, Builtin: fmt.Sprint("echo-", i)}); err != nil {
				return err
			}
		}
		// A later put of the same agent wins; a delete after a put
		// deletes.
		if err := tx.PutBackend(ctx, "id-001", agent.Backend{Kind: agent.BackendBuiltin, Builtin: "again"}); err != nil {
			return err
		}
		changed, err := tx.(store.PageWriter).UpsertRecords(ctx, ls)
		if err != nil {
			return err
		}
		for i, c := range changed {
			if !c {
				t.Errorf("listing %d not written", i)
			}
		}
		if err := tx.PutBackend(ctx, "id-002", agent.Backend{Kind: agent.BackendBuiltin, Builtin: "put"}); err != nil {
			return err
		}
		return tx.DeleteBackend(ctx, "id-002")
	})
	if err != nil {
		t.Fatal(err)
	}
	for op, want := range map[string]uint64{
		"put_backend": 0, "put_backends": 2, "upsert_records": 1, "delete_page_tags": 1, "insert_page_tags": 1, "delete_backend": 1,
	} {
		if got := opCount(t, reg, op); got != want {
			t.Errorf("statements %s: %d, want %d", op, got, want)
		}
	}
	for id, want := range map[string]string{"id-000": "echo-0", "id-001": "again", "id-499": "echo-499"} {
		b, err := db.GetBackend(ctx, id)
		if err != nil || b.Builtin != want {
			t.Errorf("backend of %s: %+v, %v; want builtin %s", id, b, err, want)
		}
	}
	if _, err := db.GetBackend(ctx, "id-002"); err == nil {
		t.Error("backend of id-002 was deleted in the batch, still there")
	}
	var tagged int
	if err := db.read.QueryRowContext(ctx, `SELECT count(*) FROM agent_tags WHERE tag = 'travel'`).Scan(&tagged); err != nil {
		t.Fatal(err)
	}
	if tagged != n {
		t.Errorf("listings tagged travel: %d, want %d", tagged, n)
	}
}

// opCount is how many statements named op the store recorded.
func opCount(t *testing.T, reg *prometheus.Registry, op string) uint64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "agentsite_store_query_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "op" && l.GetValue() == op {
					return m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return 0
}

// TestStmtJournalSpill: the statement journal spill was set before SQLite
// initialized, and a second try (SQLite now initialized) is refused, as
// SQLite documents: the setting cannot change under open connections.
func TestStmtJournalSpill(t *testing.T) {
	if stmtJournalSet != nil {
		t.Fatalf("statement journal spill not set: %v", stmtJournalSet)
	}
	db, err := Open(t.Context(), filepath.Join(t.TempDir(), "agentsite.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := setStmtJournalSpill(stmtJournalSpill); err == nil {
		t.Error("setStmtJournalSpill after SQLite initialized: no error")
	}
}
