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
	addMemorySQL = `-- name: add_memory
INSERT INTO memories (user_id, agent_id, fact, created_at) VALUES (?1, ?2, ?3, ?4)
RETURNING id`
	// forgetMemoriesSQL forgets the oldest facts of a person with an
	// agent beyond the count and the bytes (length of the text as a blob:
	// its bytes) they may hold, counted from the newest.
	forgetMemoriesSQL = `-- name: forget_memories
DELETE FROM memories WHERE id IN (
    SELECT id FROM (
        SELECT id,
               row_number() OVER (ORDER BY id DESC) AS n,
               sum(length(CAST(fact AS BLOB))) OVER (ORDER BY id DESC) AS bytes
        FROM memories WHERE user_id = ?1 AND agent_id = ?2
    ) WHERE n > ?3 OR bytes > ?4
)`
)

// AddMemory implements store.Memories: the insert and the forgetting in
// one transaction; a missing user fails the foreign key (ErrNotFound).
func (db *DB) AddMemory(ctx context.Context, m store.Memory) (store.Memory, int, error) {
	op := "add memory of user " + strconv.FormatInt(m.UserID, 10)
	if len(m.Fact) > store.MaxMemoryFactBytes {
		return store.Memory{}, 0, fmt.Errorf("sqlite: %s: the fact is over %d bytes", op, store.MaxMemoryFactBytes)
	}
	if m.CreatedAt.IsZero() {
		m.CreatedAt = time.Now()
	}
	m.CreatedAt = m.CreatedAt.UTC()
	var forgot int
	err := db.inTx(ctx, func(ctx context.Context, tx execer) error {
		if err := tx.QueryRowContext(ctx, addMemorySQL, m.UserID, m.AgentID, m.Fact, m.CreatedAt.UnixNano()).Scan(&m.ID); err != nil {
			return dbErr(op, err)
		}
		res, err := tx.ExecContext(ctx, forgetMemoriesSQL, m.UserID, m.AgentID, store.MaxMemoriesPerAgent, store.MaxMemoryBytesPerAgent)
		if err != nil {
			return dbErr(op+": forget the oldest", err)
		}
		forgot, err = rowsAffected(res, op)
		return err
	}, addMemorySQL, forgetMemoriesSQL)
	if err != nil {
		return store.Memory{}, 0, err
	}
	return m, forgot, nil
}

// ListMemories implements store.Memories.
func (db *DB) ListMemories(ctx context.Context, userID int64, agentID string, limit int) ([]store.Memory, error) {
	op := "list memories of user " + strconv.FormatInt(userID, 10)
	rows, err := db.r.QueryContext(ctx, `-- name: list_memories
SELECT id, user_id, agent_id, fact, created_at FROM memories
WHERE user_id = ?1 AND (?2 = '' OR agent_id = ?2)
ORDER BY id DESC
LIMIT ?3`, userID, agentID, store.MemoryLimit(limit))
	if err != nil {
		return nil, dbErr(op, err)
	}
	defer rows.Close()
	out := []store.Memory{}
	for rows.Next() {
		var (
			m       store.Memory
			created sql.NullInt64
		)
		if err := rows.Scan(&m.ID, &m.UserID, &m.AgentID, &m.Fact, &created); err != nil {
			return nil, dbErr(op, err)
		}
		m.CreatedAt = fromNanos(created)
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr(op, err)
	}
	return out, nil
}

// DeleteMemory implements store.Memories.
func (db *DB) DeleteMemory(ctx context.Context, userID, id int64) error {
	op := "delete memory " + strconv.FormatInt(id, 10) + " of user " + strconv.FormatInt(userID, 10)
	res, err := db.w.ExecContext(ctx, `-- name: delete_memory
DELETE FROM memories WHERE id = ? AND user_id = ?`, id, userID)
	if err != nil {
		return dbErr(op, err)
	}
	return oneRow(res, op)
}

// DeleteMemories implements store.Memories.
func (db *DB) DeleteMemories(ctx context.Context, userID int64, agentID string) (int, error) {
	op := "delete memories of user " + strconv.FormatInt(userID, 10)
	res, err := db.w.ExecContext(ctx, `-- name: delete_memories
DELETE FROM memories WHERE user_id = ?1 AND (?2 = '' OR agent_id = ?2)`, userID, agentID)
	if err != nil {
		return 0, dbErr(op, err)
	}
	return rowsAffected(res, op)
}
