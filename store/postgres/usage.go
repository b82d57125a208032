package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// ConversationsSince counts, per agent this node hosts, the conversations
// with a message since since (agent.Health.Uses7d): one grouped read of
// the conversations touched since then, each probed for a message of its
// own since then. The host's heartbeats ask for it every few minutes, not
// every round.
func (db *DB) ConversationsSince(ctx context.Context, since time.Time) (map[string]int, error) {
	rows, err := db.q.Query(ctx, `-- name: conversations_since
SELECT c.agent_id, count(*) FROM conversations c
WHERE c.updated_at >= $1
	AND EXISTS (SELECT 1 FROM messages m WHERE m.conversation_id = c.id AND m.created_at >= $1)
	AND EXISTS (SELECT 1 FROM agents a WHERE a.id = c.agent_id AND a.local AND NOT a.tombstone)
GROUP BY c.agent_id`, since.UTC())
	if err != nil {
		return nil, dbErr("count conversations", err)
	}
	out := map[string]int{}
	var (
		id string
		n  int
	)
	if _, err := pgx.ForEachRow(rows, []any{&id, &n}, func() error {
		out[id] = n
		return nil
	}); err != nil {
		return nil, dbErr("count conversations", err)
	}
	return out, nil
}
