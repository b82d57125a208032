package postgres

import "context"

// PreparedStatements is how many statements named name ("-- name: ...")
// the pool's connection holds prepared (meaningful on a pool of one).
func PreparedStatements(ctx context.Context, db *DB, name string) (int, error) {
	var n int
	err := db.q.QueryRow(ctx, `SELECT count(*) FROM pg_prepared_statements
WHERE starts_with(statement, '-- name: ' || $1::text || E'\n')`, name).Scan(&n)
	return n, err
}
