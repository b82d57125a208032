package sqlite

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agentsite/agentsite/store"
)

// SearchConversations implements store.Conversations: the owner's
// conversations (conversations_owner, latest first), each kept if its
// title or one of its user or agent messages contains q. LIKE folds ASCII
// letters only.
func (db *DB) SearchConversations(ctx context.Context, ownerKey, q string, limit int) ([]store.Conversation, error) {
	if strings.TrimSpace(q) == "" {
		return []store.Conversation{}, nil
	}
	rows, err := db.r.QueryContext(ctx, `-- name: search_conversations
SELECT `+conversationColumns+` FROM conversations
WHERE owner_key = ?1
  AND (title LIKE ?2 ESCAPE '\'
       OR EXISTS (SELECT 1 FROM messages m
                  WHERE m.conversation_id = conversations.id
                    AND m.role IN ('user', 'agent')
                    AND m.text LIKE ?2 ESCAPE '\'))
ORDER BY updated_at DESC, id DESC
LIMIT ?3`, ownerKey, store.ContainsPattern(q), store.NormalizeLimit(limit))
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
		return fmt.Errorf("sqlite: share conversation %s: empty token hash", id)
	}
	_, err := db.w.ExecContext(ctx, `-- name: share_conversation
INSERT INTO conversation_shares (conversation_id, token_hash, created_at) VALUES (?1, ?2, ?3)
ON CONFLICT (conversation_id) DO UPDATE SET token_hash = excluded.token_hash, created_at = excluded.created_at`,
		id, tokenHash, nanos(at))
	return dbErr("share conversation "+id, err)
}

// UnshareConversation implements store.Conversations.
func (db *DB) UnshareConversation(ctx context.Context, id string) error {
	_, err := db.w.ExecContext(ctx, `-- name: unshare_conversation
DELETE FROM conversation_shares WHERE conversation_id = ?`, id)
	return dbErr("unshare conversation "+id, err)
}

// SharedConversation implements store.Conversations.
func (db *DB) SharedConversation(ctx context.Context, tokenHash []byte) (store.Conversation, error) {
	c, err := scanConversation(db.r.QueryRowContext(ctx, `-- name: shared_conversation
SELECT `+conversationColumns+` FROM conversations
WHERE id = (SELECT conversation_id FROM conversation_shares WHERE token_hash = ?)`, tokenHash))
	if err != nil {
		return store.Conversation{}, dbErr("shared conversation", err)
	}
	return c, nil
}

// ConversationShared implements store.Conversations.
func (db *DB) ConversationShared(ctx context.Context, id string) (bool, error) {
	var n int
	err := db.r.QueryRowContext(ctx, `-- name: conversation_shared
SELECT count(*) FROM conversation_shares WHERE conversation_id = ?`, id).Scan(&n)
	if err != nil {
		return false, dbErr("conversation shared "+id, err)
	}
	return n > 0, nil
}
