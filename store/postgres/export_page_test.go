package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

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
// sequential scans of agent_tags its statement made (in its transaction:
// pg_stat_xact_user_tables before and after; the view also holds what the
// connection's earlier transactions did, until it is flushed).
func PageTagScans(ctx context.Context, db *DB, ls []store.Listing) (seqScans int64, err error) {
	err = db.InBatchWhole(ctx, func(ctx context.Context, tx store.Tx) error {
		bt := tx.(batchTx)
		var before int64
		if err := bt.b.QueryRow(ctx, tagScansSQL).Scan(&before); err != nil {
			return err
		}
		if _, err := bt.UpsertRecords(ctx, ls); err != nil {
			return err
		}
		if err := bt.b.QueryRow(ctx, tagScansSQL).Scan(&seqScans); err != nil {
			return err
		}
		seqScans -= before
		return nil
	})
	return seqScans, err
}

const tagScansSQL = `SELECT coalesce(sum(seq_scan), 0) FROM pg_stat_xact_user_tables WHERE relname = 'agent_tags'`

// ExpireUnheardReads runs one batch of ExpireUnheard (self: this node's
// peer id) in a transaction and
// returns how many listings it expired and how many rows of agents it
// read (pg_stat_xact_user_tables before and after: sequential reads and
// heap fetches).
func ExpireUnheardReads(ctx context.Context, db *DB, before time.Time, self string) (expired int, read int64, err error) {
	err = db.InTransaction(ctx, func(ctx context.Context, tx pgx.Tx) error {
		var start int64
		if err := tx.QueryRow(ctx, agentReadsSQL).Scan(&start); err != nil {
			return err
		}
		n, err := expireUnheardBatch(ctx, tx, before, self)
		if err != nil {
			return err
		}
		expired = n
		if err := tx.QueryRow(ctx, agentReadsSQL).Scan(&read); err != nil {
			return err
		}
		read -= start
		return nil
	})
	return expired, read, err
}

const agentReadsSQL = `SELECT coalesce(sum(coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0)), 0)
FROM pg_stat_xact_user_tables WHERE relname = 'agents'`
