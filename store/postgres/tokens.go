package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentsite/agentsite/store"
)

const tokenColumns = `k.id, k.user_id, k.name, k.hash, k.created_at, k.last_used_at`

func scanToken(row pgx.Row, extra ...any) (store.APIToken, error) {
	var (
		k        store.APIToken
		created  time.Time
		lastUsed *time.Time
	)
	dest := []any{&k.ID, &k.UserID, &k.Name, &k.Hash, &created, &lastUsed}
	if err := row.Scan(append(dest, extra...)...); err != nil {
		return store.APIToken{}, err
	}
	k.CreatedAt, k.LastUsedAt = created.UTC(), utc(lastUsed)
	return k, nil
}

// CreateAPIToken implements store.Accounts: store.ErrNotFound if the user does
// not exist, store.ErrConflict if the hash is already stored.
func (db *DB) CreateAPIToken(ctx context.Context, userID int64, name string, hash []byte) (store.APIToken, error) {
	k, err := scanToken(db.q.QueryRow(ctx, `-- name: create_api_token
INSERT INTO api_tokens AS k (user_id, name, hash) VALUES ($1, $2, $3)
RETURNING `+tokenColumns, userID, name, hash))
	if err != nil {
		return store.APIToken{}, dbErr(fmt.Sprintf("create API token for user %d", userID), err)
	}
	return k, nil
}

// ListAPITokens implements store.Accounts, oldest first.
func (db *DB) ListAPITokens(ctx context.Context, userID int64) ([]store.APIToken, error) {
	op := fmt.Sprintf("list API tokens of user %d", userID)
	rows, err := db.q.Query(ctx,
		`-- name: list_api_tokens
SELECT `+tokenColumns+` FROM api_tokens k WHERE k.user_id = $1 ORDER BY k.id`, userID)
	if err != nil {
		return nil, dbErr(op, err)
	}
	defer rows.Close()
	out := []store.APIToken{}
	for rows.Next() {
		k, err := scanToken(rows)
		if err != nil {
			return nil, dbErr(op, err)
		}
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr(op, err)
	}
	return out, nil
}

// UseAPIToken implements store.Accounts: one statement stamps the token and
// returns it with its user.
func (db *DB) UseAPIToken(ctx context.Context, hash []byte, now time.Time) (store.APIToken, store.User, error) {
	var (
		u       store.User
		created time.Time
	)
	k, err := scanToken(db.q.QueryRow(ctx, `-- name: use_api_token
UPDATE api_tokens AS k SET last_used_at = $2
FROM users u
WHERE k.hash = $1 AND u.id = k.user_id
RETURNING `+tokenColumns+`, `+userColumns, hash, now),
		&u.ID, &u.Handle, &u.PasswordHash, &created)
	if err != nil {
		return store.APIToken{}, store.User{}, dbErr("use API token", err)
	}
	u.CreatedAt = created.UTC()
	return k, u, nil
}

// DeleteAPIToken implements store.Accounts.
func (db *DB) DeleteAPIToken(ctx context.Context, userID, tokenID int64) error {
	op := fmt.Sprintf("delete API token %d of user %d", tokenID, userID)
	tag, err := db.q.Exec(ctx, `-- name: delete_api_token
DELETE FROM api_tokens WHERE id = $1 AND user_id = $2`, tokenID, userID)
	if err != nil {
		return dbErr(op, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: %s: %w", op, store.ErrNotFound)
	}
	return nil
}
