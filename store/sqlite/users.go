package sqlite

import (
	"context"
	"database/sql"
	"errors"
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

const (
	pruneHeldHandlesSQL = `-- name: prune_held_handles
DELETE FROM held_handles WHERE held_until <= ?`
	heldHandleSQL = `-- name: held_handle
SELECT held_until FROM held_handles WHERE handle = ?`
	createUserSQL = `-- name: create_user
INSERT INTO users (handle, password_hash, created_at) VALUES (?, ?, ?)
RETURNING id, handle, password_hash, created_at`
)

// CreateUser implements store.Accounts; the handle column is COLLATE NOCASE and
// unique, so "Alice" and "alice" conflict, and so is held_handles'. One
// transaction on the one writer: a deletion cannot slip between the look
// at the holds and the insert.
func (db *DB) CreateUser(ctx context.Context, handle, passwordHash string) (store.User, error) {
	op := "create user " + handle
	now := time.Now()
	var u store.User
	err := db.inTx(ctx, func(ctx context.Context, tx execer) error {
		if _, err := tx.ExecContext(ctx, pruneHeldHandlesSQL, now.UnixNano()); err != nil {
			return dbErr(op+": forget the holds that ended", err)
		}
		var until int64
		err := dbErr(op, tx.QueryRowContext(ctx, heldHandleSQL, handle).Scan(&until))
		if err == nil {
			return &store.HandleHeldError{Handle: handle, Until: time.Unix(0, until).UTC()}
		}
		if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		u, err = scanUser(tx.QueryRowContext(ctx, createUserSQL, handle, passwordHash, now.UnixNano()))
		return dbErr(op, err)
	}, pruneHeldHandlesSQL, heldHandleSQL, createUserSQL)
	if err != nil {
		return store.User{}, err
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

const (
	setPasswordSQL = `-- name: set_password
UPDATE users SET password_hash = ? WHERE id = ?`
	revokeAPITokensSQL = `-- name: revoke_api_tokens
DELETE FROM api_tokens WHERE user_id = ?`
	deleteUserConversationsSQL = `-- name: delete_user_conversations
DELETE FROM conversations WHERE owner_key = ?`
	deleteUserSQL = `-- name: delete_user
DELETE FROM users WHERE id = ? RETURNING handle`
	holdHandleSQL = `-- name: hold_handle
INSERT INTO held_handles (handle, held_until) VALUES (?, ?)
ON CONFLICT (handle) DO UPDATE SET held_until = max(held_until, excluded.held_until)`
)

// SetPassword implements store.Accounts: the new hash and the end of the
// API tokens in one transaction.
func (db *DB) SetPassword(ctx context.Context, userID int64, passwordHash string) (int, error) {
	op := "set password of user " + strconv.FormatInt(userID, 10)
	var revoked int
	err := db.inTx(ctx, func(ctx context.Context, tx execer) error {
		res, err := tx.ExecContext(ctx, setPasswordSQL, passwordHash, userID)
		if err != nil {
			return dbErr(op, err)
		}
		if err := oneRow(res, op); err != nil {
			return err
		}
		res, err = tx.ExecContext(ctx, revokeAPITokensSQL, userID)
		if err != nil {
			return dbErr(op+": revoke its API tokens", err)
		}
		revoked, err = rowsAffected(res, op)
		return err
	}, setPasswordSQL, revokeAPITokensSQL)
	if err != nil {
		return 0, err
	}
	return revoked, nil
}

// DeleteUser implements store.Accounts: the conversations, the user (its
// API tokens go by ON DELETE CASCADE, as do the messages) and the hold on
// its handle, in one transaction.
func (db *DB) DeleteUser(ctx context.Context, userID int64, ownerKey string, holdUntil time.Time) error {
	op := "delete user " + strconv.FormatInt(userID, 10)
	return db.inTx(ctx, func(ctx context.Context, tx execer) error {
		if _, err := tx.ExecContext(ctx, deleteUserConversationsSQL, ownerKey); err != nil {
			return dbErr(op, err)
		}
		var handle string
		if err := tx.QueryRowContext(ctx, deleteUserSQL, userID).Scan(&handle); err != nil {
			return dbErr(op, err)
		}
		if holdUntil.IsZero() {
			return nil
		}
		_, err := tx.ExecContext(ctx, holdHandleSQL, handle, holdUntil.UnixNano())
		return dbErr(op+": hold its handle", err)
	}, deleteUserConversationsSQL, deleteUserSQL, holdHandleSQL)
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
