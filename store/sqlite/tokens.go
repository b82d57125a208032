package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/agentsite/agentsite/store"
)

const (
	tokenColumns = `id, user_id, name, hash, created_at, last_used_at`
	useTokenSQL  = `-- name: use_api_token
UPDATE api_tokens SET last_used_at = ? WHERE hash = ? RETURNING ` + tokenColumns
)

func scanToken(row scanner) (store.APIToken, error) {
	var (
		k                 store.APIToken
		created, lastUsed sql.NullInt64
	)
	if err := row.Scan(&k.ID, &k.UserID, &k.Name, &k.Hash, &created, &lastUsed); err != nil {
		return store.APIToken{}, err
	}
	k.CreatedAt, k.LastUsedAt = fromNanos(created), fromNanos(lastUsed)
	return k, nil
}

// CreateAPIToken implements store.Accounts: ErrConflict for a hash already
// stored, ErrNotFound for an unknown user.
func (db *DB) CreateAPIToken(ctx context.Context, userID int64, name string, hash []byte) (store.APIToken, error) {
	k, err := scanToken(db.w.QueryRowContext(ctx, `-- name: create_api_token
INSERT INTO api_tokens (user_id, name, hash, created_at) VALUES (?, ?, ?, ?)
RETURNING `+tokenColumns, userID, name, hash, time.Now().UnixNano()))
	if err != nil {
		return store.APIToken{}, dbErr(fmt.Sprintf("create API token for user %d", userID), err)
	}
	return k, nil
}

// ListAPITokens implements store.Accounts, oldest first.
func (db *DB) ListAPITokens(ctx context.Context, userID int64) ([]store.APIToken, error) {
	op := fmt.Sprintf("list API tokens of user %d", userID)
	rows, err := db.r.QueryContext(ctx,
		`-- name: list_api_tokens
SELECT `+tokenColumns+` FROM api_tokens WHERE user_id = ? ORDER BY id`, userID)
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

// UseAPIToken implements store.Accounts: the stamp and the user lookup share
// one transaction.
func (db *DB) UseAPIToken(ctx context.Context, hash []byte, now time.Time) (store.APIToken, store.User, error) {
	var (
		k   store.APIToken
		u   store.User
		err error
	)
	err = db.inTx(ctx, func(ctx context.Context, tx execer) error {
		k, err = scanToken(tx.QueryRowContext(ctx, useTokenSQL, nanos(now), hash))
		if err != nil {
			return dbErr("use API token", err)
		}
		u, err = scanUser(tx.QueryRowContext(ctx, userByIDSQL, k.UserID))
		return dbErr("use API token: get its user", err)
	}, useTokenSQL, userByIDSQL)
	if err != nil {
		return store.APIToken{}, store.User{}, err
	}
	return k, u, nil
}

// DeleteAPIToken implements store.Accounts.
func (db *DB) DeleteAPIToken(ctx context.Context, userID, tokenID int64) error {
	op := fmt.Sprintf("delete API token %d of user %d", tokenID, userID)
	res, err := db.w.ExecContext(ctx, `-- name: delete_api_token
DELETE FROM api_tokens WHERE id = ? AND user_id = ?`, tokenID, userID)
	if err != nil {
		return dbErr(op, err)
	}
	n, err := rowsAffected(res, op)
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("sqlite: %s: %w", op, store.ErrNotFound)
	}
	return nil
}
