package postgres

import (
	"context"

	"github.com/agentsite/agentsite/store"
)

// PreparedStatements is how many statements named name ("-- name: ...")
// the pool's connection holds prepared (meaningful on a pool of one).
func PreparedStatements(ctx context.Context, db *DB, name string) (int, error) {
	var n int
	err := db.q.QueryRow(ctx, `SELECT count(*) FROM pg_prepared_statements
WHERE starts_with(statement, '-- name: ' || $1::text || E'\n')`, name).Scan(&n)
	return n, err
}

// PageTagScans writes ls through a batch's PageWriter and returns how many
// sequential scans of agent_tags its transaction made
// (pg_stat_xact_user_tables, the transaction's own counts).
func PageTagScans(ctx context.Context, db *DB, ls []store.Listing) (seqScans int64, err error) {
	err = db.InBatchWhole(ctx, func(ctx context.Context, tx store.Tx) error {
		bt := tx.(batchTx)
		if _, err := bt.UpsertRecords(ctx, ls); err != nil {
			return err
		}
		return bt.b.QueryRow(ctx, `SELECT coalesce(sum(seq_scan), 0) FROM pg_stat_xact_user_tables WHERE relname = 'agent_tags'`).Scan(&seqScans)
	})
	return seqScans, err
}
