package postgres

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agentsite/agentsite/store"
)

// SearchConversations implements store.Conversations: the owner's
// conversations (conversations_owner, latest first), each kept if its
// title or one of its user or agent messages contains q (ILIKE).
func (db *DB) SearchConversations(ctx context.Context, ownerKey, q string, limit int) ([]store.Conversation, error) {
	if strings.TrimSpace(q) == "" {
		return []store.Conversation{}, nil
	}
	rows, err := db.q.Query(ctx, `-- name: search_conversations
SELECT `+conversationColumns+` FROM conversations c
WHERE c.owner_key = $1
  AND (c.title ILIKE $2 ESCAPE '\'
       OR EXISTS (SELECT 1 FROM messages m
                  WHERE m.conversation_id = c.id
                    AND m.role IN ('user', 'agent')
                    AND m.text ILIKE $2 ESCAPE '\'))
ORDER BY c.updated_at DESC, c.id DESC
LIMIT $3`, ownerKey, store.ContainsPattern(q), store.NormalizeLimit(limit))
	if err != nil {
		return nil, dbErr("search conversations", err)
	}
	defer rows.Close()
	out := []store.Conversation{}
	for rows.Next() {
		c, err := scanConversation(rows)
		if err != nil {
			return nil, dbErr("search conversations", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr("search conversations", err)
	}
	return out, nil
}

// ShareConversation implements store.Conversations: a missing
// conversation fails the foreign key (ErrNotFound).
func (db *DB) ShareConversation(ctx context.Context, id string, tokenHash []byte, at time.Time) error {
	if len(tokenHash) == 0 {
		return fmt.Errorf("postgres: share conversation %s: empty token hash", id)
	}
	_, err := db.q.Exec(ctx, `-- name: share_conversation
INSERT INTO conversation_shares (conversation_id, token_hash, created_at) VALUES ($1, $2, $3)
ON CONFLICT (conversation_id) DO UPDATE SET token_hash = excluded.token_hash, created_at = excluded.created_at`,
		id, tokenHash, at)
	return dbErr("share conversation "+id, err)
}

// UnshareConversation implements store.Conversations.
func (db *DB) UnshareConversation(ctx context.Context, id string) error {
	_, err := db.q.Exec(ctx, `-- name: unshare_conversation
DELETE FROM conversation_shares WHERE conversation_id = $1`, id)
	return dbErr("unshare conversation "+id, err)
}

// SharedConversation implements store.Conversations.
func (db *DB) SharedConversation(ctx context.Context, tokenHash []byte) (store.Conversation, error) {
	c, err := scanConversation(db.q.QueryRow(ctx, `-- name: shared_conversation
SELECT `+conversationColumns+` FROM conversation_shares s JOIN conversations c ON c.id = s.conversation_id
WHERE s.token_hash = $1`, tokenHash))
	if err != nil {
		return store.Conversation{}, dbErr("shared conversation", err)
	}
	return c, nil
}

// ConversationShared implements store.Conversations.
func (db *DB) ConversationShared(ctx context.Context, id string) (bool, error) {
	var ok bool
	err := db.q.QueryRow(ctx, `-- name: conversation_shared
SELECT EXISTS (SELECT 1 FROM conversation_shares WHERE conversation_id = $1)`, id).Scan(&ok)
	if err != nil {
		return false, dbErr("conversation shared "+id, err)
	}
	return ok, nil
}
