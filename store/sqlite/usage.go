package sqlite

import (
	"context"
	"time"
)

// ConversationsSince counts, per agent this node hosts, the conversations
// with a message since since (agent.Health.Uses7d): one grouped read of
// the conversations touched since then, each probed for a message of its
// own since then. The host's heartbeats ask for it every few minutes, not
// every round.
func (db *DB) ConversationsSince(ctx context.Context, since time.Time) (map[string]int, error) {
	rows, err := db.r.QueryContext(ctx, `-- name: conversations_since
SELECT c.agent_id, count(*) FROM conversations c
WHERE c.updated_at >= ?1
	AND EXISTS (SELECT 1 FROM messages m WHERE m.conversation_id = c.id AND m.created_at >= ?1)
	AND EXISTS (SELECT 1 FROM agents a WHERE a.id = c.agent_id AND a.local = 1 AND a.tombstone = 0)
GROUP BY c.agent_id`, nanos(since))
	if err != nil {
		return nil, dbErr("count conversations", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var (
			id string
			n  int
		)
		if err := rows.Scan(&id, &n); err != nil {
			return nil, dbErr("count conversations", err)
		}
		out[id] = n
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr("count conversations", err)
	}
	return out, nil
}
