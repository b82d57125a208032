package postgres

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentsite/agentsite/store"
)

const userColumns = `u.id, u.handle, u.password_hash, u.created_at`

func scanUser(row pgx.Row) (store.User, error) {
	var (
		u       store.User
		created time.Time
	)
	if err := row.Scan(&u.ID, &u.Handle, &u.PasswordHash, &created); err != nil {
		return store.User{}, err
	}
	u.CreatedAt = created.UTC()
	return u, nil
}

// CreateUser implements store.Accounts; the unique index on lower(handle)
// turns a taken handle, in any case, into store.ErrConflict.
func (db *DB) CreateUser(ctx context.Context, handle, passwordHash string) (store.User, error) {
	u, err := scanUser(db.q.QueryRow(ctx, `-- name: create_user
INSERT INTO users AS u (handle, password_hash) VALUES ($1, $2)
RETURNING `+userColumns, handle, passwordHash))
	if err != nil {
		return store.User{}, dbErr("create user "+handle, err)
	}
	return u, nil
}

// GetUserByHandle implements store.Accounts (case-insensitive, served by the
// users_handle_lower index).
func (db *DB) GetUserByHandle(ctx context.Context, handle string) (store.User, error) {
	u, err := scanUser(db.q.QueryRow(ctx,
		`-- name: get_user_by_handle
SELECT `+userColumns+` FROM users u WHERE lower(u.handle) = lower($1)`, handle))
	if err != nil {
		return store.User{}, dbErr("get user "+handle, err)
	}
	return u, nil
}

// GetUserByID implements store.Accounts.
func (db *DB) GetUserByID(ctx context.Context, id int64) (store.User, error) {
	u, err := scanUser(db.q.QueryRow(ctx, `-- name: get_user_by_id
SELECT `+userColumns+` FROM users u WHERE u.id = $1`, id))
	if err != nil {
		return store.User{}, dbErr("get user "+strconv.FormatInt(id, 10), err)
	}
	return u, nil
}

// SetPassword implements store.Accounts.
func (db *DB) SetPassword(ctx context.Context, userID int64, passwordHash string) error {
	op := "set password of user " + strconv.FormatInt(userID, 10)
	tag, err := db.q.Exec(ctx, `-- name: set_password
UPDATE users SET password_hash = $1 WHERE id = $2`, passwordHash, userID)
	if err != nil {
		return dbErr(op, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: %s: %w", op, store.ErrNotFound)
	}
	return nil
}

// DeleteUser implements store.Accounts: the user and its conversations in
// one statement (API tokens and messages go by ON DELETE CASCADE).
func (db *DB) DeleteUser(ctx context.Context, userID int64, ownerKey string) error {
	op := "delete user " + strconv.FormatInt(userID, 10)
	tag, err := db.q.Exec(ctx, `-- name: delete_user
WITH c AS (DELETE FROM conversations WHERE owner_key = $2)
DELETE FROM users WHERE id = $1`, userID, ownerKey)
	if err != nil {
		return dbErr(op, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: %s: %w", op, store.ErrNotFound)
	}
	return nil
}
