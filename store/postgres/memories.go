package postgres

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentsite/agentsite/store"
)

// AddMemory implements store.Memories: in one transaction, the person's
// row locked (so that two facts added at once are bounded together; a
// missing user is ErrNotFound), the insert, and the oldest facts beyond
// the count and the bytes forgotten, counted from the newest.
func (db *DB) AddMemory(ctx context.Context, m store.Memory) (store.Memory, int, error) {
	op := "add memory of user " + strconv.FormatInt(m.UserID, 10)
	if len(m.Fact) > store.MaxMemoryFactBytes {
		return store.Memory{}, 0, fmt.Errorf("postgres: %s: the fact is over %d bytes", op, store.MaxMemoryFactBytes)
	}
	if m.CreatedAt.IsZero() {
		m.CreatedAt = time.Now()
	}
	m.CreatedAt = m.CreatedAt.UTC().Truncate(time.Microsecond)
	var forgot int
	err := db.InTransaction(ctx, func(ctx context.Context, tx pgx.Tx) error {
		var one int
		if err := tx.QueryRow(ctx, `-- name: lock_memory_user
SELECT 1 FROM users WHERE id = $1 FOR NO KEY UPDATE`, m.UserID).Scan(&one); err != nil {
			return dbErr(op, err)
		}
		if err := tx.QueryRow(ctx, `-- name: add_memory
INSERT INTO memories (user_id, agent_id, fact, created_at) VALUES ($1, $2, $3, $4)
RETURNING id`, m.UserID, m.AgentID, m.Fact, m.CreatedAt).Scan(&m.ID); err != nil {
			return dbErr(op, err)
		}
		tag, err := tx.Exec(ctx, `-- name: forget_memories
DELETE FROM memories WHERE id IN (
    SELECT id FROM (
        SELECT id,
               row_number() OVER (ORDER BY id DESC) AS n,
               sum(octet_length(fact)) OVER (ORDER BY id DESC) AS bytes
        FROM memories WHERE user_id = $1 AND agent_id = $2
    ) w WHERE n > $3 OR bytes > $4
)`, m.UserID, m.AgentID, store.MaxMemoriesPerAgent, store.MaxMemoryBytesPerAgent)
		if err != nil {
			return dbErr(op+": forget the oldest", err)
		}
		forgot = int(tag.RowsAffected())
		return nil
	})
	if err != nil {
		return store.Memory{}, 0, err
	}
	return m, forgot, nil
}

// ListMemories implements store.Memories.
func (db *DB) ListMemories(ctx context.Context, userID int64, agentID string, limit int) ([]store.Memory, error) {
	op := "list memories of user " + strconv.FormatInt(userID, 10)
	rows, err := db.q.Query(ctx, `-- name: list_memories
SELECT id, user_id, agent_id, fact, created_at FROM memories
WHERE user_id = $1 AND ($2 = '' OR agent_id = $2)
ORDER BY id DESC
LIMIT $3`, userID, agentID, store.MemoryLimit(limit))
	if err != nil {
		return nil, dbErr(op, err)
	}
	defer rows.Close()
	out := []store.Memory{}
	for rows.Next() {
		var m store.Memory
		if err := rows.Scan(&m.ID, &m.UserID, &m.AgentID, &m.Fact, &m.CreatedAt); err != nil {
			return nil, dbErr(op, err)
		}
		m.CreatedAt = m.CreatedAt.UTC()
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr(op, err)
	}
	return out, nil
}

// DeleteMemory implements store.Memories.
func (db *DB) DeleteMemory(ctx context.Context, userID, id int64) error {
	op := fmt.Sprintf("delete memory %d of user %d", id, userID)
	tag, err := db.q.Exec(ctx, `-- name: delete_memory
DELETE FROM memories WHERE id = $1 AND user_id = $2`, id, userID)
	if err != nil {
		return dbErr(op, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: %s: %w", op, store.ErrNotFound)
	}
	return nil
}

// DeleteMemories implements store.Memories.
func (db *DB) DeleteMemories(ctx context.Context, userID int64, agentID string) (int, error) {
	op := "delete memories of user " + strconv.FormatInt(userID, 10)
	tag, err := db.q.Exec(ctx, `-- name: delete_memories
DELETE FROM memories WHERE user_id = $1 AND ($2 = '' OR agent_id = $2)`, userID, agentID)
	if err != nil {
		return 0, dbErr(op, err)
	}
	return int(tag.RowsAffected()), nil
}
