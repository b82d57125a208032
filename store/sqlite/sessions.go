package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// SessionFind implements store.Sessions: an expired session is not found.
func (db *DB) SessionFind(ctx context.Context, token string) ([]byte, bool, error) {
	var data []byte
	err := db.r.QueryRowContext(ctx,
		`-- name: session_find
SELECT data FROM sessions WHERE token = ? AND expiry > ?`, token, time.Now().UnixNano()).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, dbErr("find session", err)
	}
	return data, true, nil
}

// SessionCommit implements store.Sessions.
func (db *DB) SessionCommit(ctx context.Context, token string, data []byte, expiry time.Time) error {
	if data == nil {
		data = []byte{}
	}
	_, err := db.w.ExecContext(ctx, `-- name: session_commit
INSERT INTO sessions (token, data, expiry) VALUES (?, ?, ?)
ON CONFLICT (token) DO UPDATE SET data = excluded.data, expiry = excluded.expiry`,
		token, data, expiry.UnixNano())
	return dbErr("commit session", err)
}

// SessionDelete implements store.Sessions.
func (db *DB) SessionDelete(ctx context.Context, token string) error {
	_, err := db.w.ExecContext(ctx, `-- name: session_delete
DELETE FROM sessions WHERE token = ?`, token)
	return dbErr("delete session", err)
}

// SessionDeleteExpired implements store.Sessions.
func (db *DB) SessionDeleteExpired(ctx context.Context, now time.Time) error {
	_, err := db.w.ExecContext(ctx, `-- name: session_delete_expired
DELETE FROM sessions WHERE expiry <= ?`, now.UnixNano())
	return dbErr("delete expired sessions", err)
}
