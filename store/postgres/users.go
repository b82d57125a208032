package postgres

import (
	"context"
	"errors"
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
// turns a taken handle, in any case, into store.ErrConflict. The lock on
// held_handles (which DeleteUser's hold waits for, and waits on) keeps a
// deletion from committing between the look at the holds and the insert.
func (db *DB) CreateUser(ctx context.Context, handle, passwordHash string) (store.User, error) {
	op := "create user " + handle
	var u store.User
	err := db.InTransaction(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `-- name: lock_held_handles
LOCK TABLE held_handles IN SHARE ROW EXCLUSIVE MODE`); err != nil {
			return dbErr(op, err)
		}
		if _, err := tx.Exec(ctx, `-- name: prune_held_handles
DELETE FROM held_handles WHERE held_until <= now()`); err != nil {
			return dbErr(op+": forget the holds that ended", err)
		}
		var until time.Time
		err := dbErr(op, tx.QueryRow(ctx, `-- name: held_handle
SELECT held_until FROM held_handles WHERE handle = lower($1)`, handle).Scan(&until))
		if err == nil {
			return &store.HandleHeldError{Handle: handle, Until: until.UTC()}
		}
		if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		u, err = scanUser(tx.QueryRow(ctx, `-- name: create_user
INSERT INTO users AS u (handle, password_hash) VALUES ($1, $2)
RETURNING `+userColumns, handle, passwordHash))
		return dbErr(op, err)
	})
	if err != nil {
		return store.User{}, err
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

// SetPassword implements store.Accounts: the new hash and the end of the
// API tokens in one statement.
func (db *DB) SetPassword(ctx context.Context, userID int64, passwordHash string) (int, error) {
	op := "set password of user " + strconv.FormatInt(userID, 10)
	var users, revoked int
	err := db.q.QueryRow(ctx, `-- name: set_password
WITH u AS (UPDATE users SET password_hash = $1 WHERE id = $2 RETURNING id),
t AS (DELETE FROM api_tokens WHERE user_id IN (SELECT id FROM u) RETURNING 1)
SELECT (SELECT count(*) FROM u), (SELECT count(*) FROM t)`, passwordHash, userID).Scan(&users, &revoked)
	if err != nil {
		return 0, dbErr(op, err)
	}
	if users == 0 {
		return 0, fmt.Errorf("postgres: %s: %w", op, store.ErrNotFound)
	}
	return revoked, nil
}

// DeleteUser implements store.Accounts: the user, its conversations and
// the hold on its handle in one statement (API tokens and messages go by
// ON DELETE CASCADE). A zero holdUntil holds nothing.
func (db *DB) DeleteUser(ctx context.Context, userID int64, ownerKey string, holdUntil time.Time) error {
	op := "delete user " + strconv.FormatInt(userID, 10)
	var hold *time.Time
	if !holdUntil.IsZero() {
		hold = &holdUntil
	}
	var n int
	err := db.q.QueryRow(ctx, `-- name: delete_user
WITH c AS (DELETE FROM conversations WHERE owner_key = $2),
u AS (DELETE FROM users WHERE id = $1 RETURNING handle),
h AS (
    INSERT INTO held_handles (handle, held_until)
    SELECT lower(handle), $3::timestamptz FROM u WHERE $3::timestamptz IS NOT NULL
    ON CONFLICT (handle) DO UPDATE SET held_until = greatest(held_handles.held_until, excluded.held_until)
)
SELECT count(*) FROM u`, userID, ownerKey, hold).Scan(&n)
	if err != nil {
		return dbErr(op, err)
	}
	if n == 0 {
		return fmt.Errorf("postgres: %s: %w", op, store.ErrNotFound)
	}
	return nil
}
