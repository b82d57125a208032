package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"time"

	"github.com/agentsite/agentsite/store"
)

const (
	userColumns = `u.id, u.handle, u.password_hash, u.created_at`
	userByIDSQL = `-- name: get_user_by_id
SELECT ` + userColumns + ` FROM users u WHERE u.id = ?`
)

func scanUser(row scanner, extra ...any) (store.User, error) {
	var (
		u       store.User
		created sql.NullInt64
	)
	if err := row.Scan(append([]any{&u.ID, &u.Handle, &u.PasswordHash, &created}, extra...)...); err != nil {
		return store.User{}, err
	}
	u.CreatedAt = fromNanos(created)
	return u, nil
}

// CreateUser implements store.Accounts; the handle column is COLLATE NOCASE and
// unique, so "Alice" and "alice" conflict.
func (db *DB) CreateUser(ctx context.Context, handle, passwordHash string) (store.User, error) {
	u, err := scanUser(db.w.QueryRowContext(ctx, `-- name: create_user
INSERT INTO users (handle, password_hash, created_at) VALUES (?, ?, ?)
RETURNING id, handle, password_hash, created_at`, handle, passwordHash, time.Now().UnixNano()))
	if err != nil {
		return store.User{}, dbErr("create user "+handle, err)
	}
	return u, nil
}

// GetUserByHandle implements store.Accounts, case-insensitively.
func (db *DB) GetUserByHandle(ctx context.Context, handle string) (store.User, error) {
	u, err := scanUser(db.r.QueryRowContext(ctx,
		`-- name: get_user_by_handle
SELECT `+userColumns+` FROM users u WHERE u.handle = ?`, handle))
	if err != nil {
		return store.User{}, dbErr("get user "+handle, err)
	}
	return u, nil
}

// GetUserByID implements store.Accounts.
func (db *DB) GetUserByID(ctx context.Context, id int64) (store.User, error) {
	u, err := scanUser(db.r.QueryRowContext(ctx, userByIDSQL, id))
	if err != nil {
		return store.User{}, dbErr("get user "+strconv.FormatInt(id, 10), err)
	}
	return u, nil
}

// SetPassword implements store.Accounts.
func (db *DB) SetPassword(ctx context.Context, userID int64, passwordHash string) error {
	op := "set password of user " + strconv.FormatInt(userID, 10)
	res, err := db.w.ExecContext(ctx, `-- name: set_password
UPDATE users SET password_hash = ? WHERE id = ?`, passwordHash, userID)
	if err != nil {
		return dbErr(op, err)
	}
	return oneRow(res, op)
}

// DeleteUser implements store.Accounts: the conversations, then the user
// (its API tokens go by ON DELETE CASCADE, as do the messages). Two
// statements: a failure between them leaves the account, which a retry
// deletes.
func (db *DB) DeleteUser(ctx context.Context, userID int64, ownerKey string) error {
	op := "delete user " + strconv.FormatInt(userID, 10)
	if _, err := db.w.ExecContext(ctx, `-- name: delete_user_conversations
DELETE FROM conversations WHERE owner_key = ?`, ownerKey); err != nil {
		return dbErr(op, err)
	}
	res, err := db.w.ExecContext(ctx, `-- name: delete_user
DELETE FROM users WHERE id = ?`, userID)
	if err != nil {
		return dbErr(op, err)
	}
	return oneRow(res, op)
}

func oneRow(res sql.Result, op string) error {
	n, err := rowsAffected(res, op)
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("sqlite: %s: %w", op, store.ErrNotFound)
	}
	return nil
}
