package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// SessionFind implements store.Sessions with scs.CtxStore semantics: an
// expired session is not found. Expiry is judged by this process's clock,
// the one scs set it with, not the database server's.
func (db *DB) SessionFind(ctx context.Context, token string) ([]byte, bool, error) {
	var data []byte
	err := db.q.QueryRow(ctx,
		`-- name: session_find
SELECT data FROM sessions WHERE token = $1 AND expiry > $2`, token, time.Now()).Scan(&data)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, dbErr("find session", err)
	}
	return data, true, nil
}

// SessionCommit implements store.Sessions.
func (db *DB) SessionCommit(ctx context.Context, token string, data []byte, expiry time.Time) error {
	_, err := db.q.Exec(ctx, `-- name: session_commit
INSERT INTO sessions (token, data, expiry) VALUES ($1, $2, $3)
ON CONFLICT (token) DO UPDATE SET data = excluded.data, expiry = excluded.expiry`,
		token, data, expiry)
	return dbErr("commit session", err)
}

// SessionDelete implements store.Sessions.
func (db *DB) SessionDelete(ctx context.Context, token string) error {
	_, err := db.q.Exec(ctx, `-- name: session_delete
DELETE FROM sessions WHERE token = $1`, token)
	return dbErr("delete session", err)
}

// SessionDeleteExpired implements store.Sessions.
func (db *DB) SessionDeleteExpired(ctx context.Context, now time.Time) error {
	_, err := db.q.Exec(ctx, `-- name: session_delete_expired
DELETE FROM sessions WHERE expiry <= $1`, now)
	return dbErr("delete expired sessions", err)
}
