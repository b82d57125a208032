package postgres

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentsite/agentsite/store"
)

const conversationColumns = `c.id, c.agent_id, c.owner_key, c.agent_owner, c.agent_publisher, c.title, c.created_at, c.updated_at`

func scanConversation(row pgx.Row) (store.Conversation, error) {
	var (
		c                store.Conversation
		created, updated time.Time
	)
	if err := row.Scan(&c.ID, &c.AgentID, &c.OwnerKey, &c.AgentOwner, &c.AgentPublisher, &c.Title, &created, &updated); err != nil {
		return store.Conversation{}, err
	}
	c.CreatedAt, c.UpdatedAt = created.UTC(), updated.UTC()
	return c, nil
}

// CreateConversation implements store.Conversations. A zero CreatedAt means now; a
// zero UpdatedAt means CreatedAt. A taken id is store.ErrConflict.
func (db *DB) CreateConversation(ctx context.Context, c store.Conversation) (store.Conversation, error) {
	if c.CreatedAt.IsZero() {
		c.CreatedAt = time.Now().UTC()
	}
	if c.UpdatedAt.IsZero() {
		c.UpdatedAt = c.CreatedAt
	}
	out, err := scanConversation(db.q.QueryRow(ctx, `-- name: create_conversation
INSERT INTO conversations AS c (id, agent_id, owner_key, agent_owner, agent_publisher, title, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
RETURNING `+conversationColumns, c.ID, c.AgentID, c.OwnerKey, c.AgentOwner, c.AgentPublisher, c.Title, c.CreatedAt, c.UpdatedAt))
	if err != nil {
		return store.Conversation{}, dbErr("create conversation "+c.ID, err)
	}
	return out, nil
}

// StartConversation implements store.Conversations: the conversation and
// its first message in one statement.
func (db *DB) StartConversation(ctx context.Context, c store.Conversation, first *store.Message) (store.Conversation, *store.Message, error) {
	if first == nil {
		out, err := db.CreateConversation(ctx, c)
		return out, nil, err
	}
	if c.CreatedAt.IsZero() {
		c.CreatedAt = time.Now().UTC()
	}
	if c.UpdatedAt.IsZero() {
		c.UpdatedAt = c.CreatedAt
	}
	m := *first
	m.ConversationID = c.ID
	if m.CreatedAt.IsZero() {
		m.CreatedAt = c.CreatedAt
	}
	if err := db.conv.Do(ctx, convOp{conv: &c, msg: &m}); err != nil {
		return store.Conversation{}, nil, err
	}
	return c, &m, nil
}

// startConversationSQL stores a conversation and its first message in
// one statement.
const startConversationSQL = `-- name: start_conversation
WITH c AS (
	INSERT INTO conversations AS c (id, agent_id, owner_key, agent_owner, agent_publisher, title, created_at, updated_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
	RETURNING ` + conversationColumns + `
), m AS (
	INSERT INTO messages (conversation_id, role, text, created_at)
	SELECT id, $9, $10, $11 FROM c
	RETURNING id, created_at
)
SELECT c.*, m.id, m.created_at FROM c, m`

// GetConversation implements store.Conversations.
func (db *DB) GetConversation(ctx context.Context, id string) (store.Conversation, error) {
	c, err := scanConversation(db.q.QueryRow(ctx,
		`-- name: get_conversation
SELECT `+conversationColumns+` FROM conversations c WHERE c.id = $1`, id))
	if err != nil {
		return store.Conversation{}, dbErr("get conversation "+id, err)
	}
	return c, nil
}

// ListConversations implements store.Conversations.
func (db *DB) ListConversations(ctx context.Context, ownerKey string, limit int) ([]store.Conversation, error) {
	rows, err := db.q.Query(ctx, `-- name: list_conversations
SELECT `+conversationColumns+` FROM conversations c
WHERE c.owner_key = $1
ORDER BY c.updated_at DESC, c.id DESC
LIMIT $2`, ownerKey, store.NormalizeLimit(limit))
	if err != nil {
		return nil, dbErr("list conversations", err)
	}
	defer rows.Close()
	out := []store.Conversation{}
	for rows.Next() {
		c, err := scanConversation(rows)
		if err != nil {
			return nil, dbErr("list conversations", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr("list conversations", err)
	}
	return out, nil
}

// appendMessageSQL inserts a message and bumps its conversation's
// updated_at in one statement; no row when the conversation is missing.
const appendMessageSQL = `-- name: append_message
WITH bumped AS (
	UPDATE conversations SET updated_at = greatest(updated_at, $4) WHERE id = $1 RETURNING id
)
INSERT INTO messages (conversation_id, role, text, created_at)
SELECT id, $2, $3, $4 FROM bumped
RETURNING id, created_at`

// AppendMessage implements store.Conversations: the insert and the bump of the
// conversation's updated_at are one statement, written by the
// conversation writer (groupcommit.go) with other turns' writes. A zero
// CreatedAt means now; a missing conversation is store.ErrNotFound.
func (db *DB) AppendMessage(ctx context.Context, m store.Message) (store.Message, error) {
	if m.CreatedAt.IsZero() {
		m.CreatedAt = time.Now().UTC()
	}
	if err := db.conv.Do(ctx, convOp{msg: &m}); err != nil {
		return store.Message{}, err
	}
	return m, nil
}

// ListMessages implements store.Conversations.
func (db *DB) ListMessages(ctx context.Context, conversationID string, limit int) ([]store.Message, error) {
	op := fmt.Sprintf("list messages of conversation %s", conversationID)
	rows, err := db.q.Query(ctx, `-- name: list_messages
SELECT id, conversation_id, role, text, created_at FROM messages
WHERE conversation_id = $1
ORDER BY id DESC
LIMIT $2`, conversationID, store.NormalizeMessageLimit(limit))
	if err != nil {
		return nil, dbErr(op, err)
	}
	defer rows.Close()
	out := []store.Message{}
	for rows.Next() {
		var (
			m       store.Message
			created time.Time
		)
		if err := rows.Scan(&m.ID, &m.ConversationID, &m.Role, &m.Text, &created); err != nil {
			return nil, dbErr(op, err)
		}
		m.CreatedAt = created.UTC()
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr(op, err)
	}
	slices.Reverse(out)
	return out, nil
}

// MessageTail implements store.Conversations from the index
// messages_conversation alone.
func (db *DB) MessageTail(ctx context.Context, conversationID string, fromID int64) (int, int64, error) {
	var (
		n    int
		last int64
	)
	err := db.q.QueryRow(ctx, `-- name: message_tail
SELECT count(*), coalesce(max(id), 0) FROM messages WHERE conversation_id = $1 AND id >= $2`, conversationID, fromID).Scan(&n, &last)
	if err != nil {
		return 0, 0, dbErr("read the tail of conversation "+conversationID, err)
	}
	return n, last, nil
}

// RenameConversation implements store.Conversations.
func (db *DB) RenameConversation(ctx context.Context, id, title string) (store.Conversation, error) {
	c, err := scanConversation(db.q.QueryRow(ctx, `-- name: rename_conversation
UPDATE conversations AS c SET title = $2 WHERE c.id = $1
RETURNING `+conversationColumns, id, title))
	if err != nil {
		return store.Conversation{}, dbErr("rename conversation "+id, err)
	}
	return c, nil
}

// DeleteConversation implements store.Conversations: its messages go with
// it (ON DELETE CASCADE).
func (db *DB) DeleteConversation(ctx context.Context, id string) error {
	op := "delete conversation " + id
	tag, err := db.q.Exec(ctx, `-- name: delete_conversation
DELETE FROM conversations WHERE id = $1`, id)
	if err != nil {
		return dbErr(op, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: %s: %w", op, store.ErrNotFound)
	}
	return nil
}

// DeleteMessagesFrom implements store.Conversations.
func (db *DB) DeleteMessagesFrom(ctx context.Context, conversationID string, fromID int64) error {
	_, err := db.q.Exec(ctx, `-- name: delete_messages_from
DELETE FROM messages WHERE conversation_id = $1 AND id >= $2`, conversationID, fromID)
	return dbErr("delete messages of conversation "+conversationID, err)
}
