package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentsite/agentsite/store"
)

const (
	conversationColumns = `id, agent_id, owner_key, agent_owner, agent_publisher, title, created_at, updated_at`
	bumpConversationSQL = `-- name: bump_conversation
UPDATE conversations SET updated_at = max(updated_at, ?1) WHERE id = ?2`
	createConversationSQL = `-- name: create_conversation
INSERT INTO conversations (id, agent_id, owner_key, agent_owner, agent_publisher, title, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
RETURNING ` + conversationColumns
	insertMessageSQL = `-- name: append_message
INSERT INTO messages (conversation_id, role, text, created_at) VALUES (?, ?, ?, ?) RETURNING id`
)

func scanConversation(row scanner) (store.Conversation, error) {
	var (
		c                store.Conversation
		created, updated sql.NullInt64
	)
	if err := row.Scan(&c.ID, &c.AgentID, &c.OwnerKey, &c.AgentOwner, &c.AgentPublisher, &c.Title, &created, &updated); err != nil {
		return store.Conversation{}, err
	}
	c.CreatedAt, c.UpdatedAt = fromNanos(created), fromNanos(updated)
	return c, nil
}

// CreateConversation implements store.Conversations. The caller chooses the id;
// CreatedAt defaults to now and UpdatedAt to CreatedAt. It is written by
// the conversation writer (groupcommit.go), with other turns' writes.
func (db *DB) CreateConversation(ctx context.Context, c store.Conversation) (store.Conversation, error) {
	c, _, err := db.StartConversation(ctx, c, nil)
	return c, err
}

// StartConversation implements store.Conversations: the conversation and
// its first message (none when first is nil) in one transaction.
func (db *DB) StartConversation(ctx context.Context, c store.Conversation, first *store.Message) (store.Conversation, *store.Message, error) {
	if c.ID == "" {
		return store.Conversation{}, nil, errors.New("sqlite: create conversation: empty id")
	}
	if c.CreatedAt.IsZero() {
		c.CreatedAt = time.Now().UTC()
	}
	if c.UpdatedAt.IsZero() {
		c.UpdatedAt = c.CreatedAt
	}
	var m *store.Message
	if first != nil {
		m = new(store.Message)
		*m = *first
		m.ConversationID = c.ID
		if m.CreatedAt.IsZero() {
			m.CreatedAt = c.CreatedAt
		}
	}
	if err := db.writeConv(ctx, convOp{conv: &c, msg: m}); err != nil {
		return store.Conversation{}, nil, err
	}
	if m != nil {
		m.CreatedAt = m.CreatedAt.UTC()
	}
	return c, m, nil
}

// GetConversation implements store.Conversations.
func (db *DB) GetConversation(ctx context.Context, id string) (store.Conversation, error) {
	c, err := scanConversation(db.r.QueryRowContext(ctx,
		`-- name: get_conversation
SELECT `+conversationColumns+` FROM conversations WHERE id = ?`, id))
	if err != nil {
		return store.Conversation{}, dbErr("get conversation "+id, err)
	}
	return c, nil
}

// ListConversations implements store.Conversations: a backward walk of
// conversations_owner.
func (db *DB) ListConversations(ctx context.Context, ownerKey string, limit int) ([]store.Conversation, error) {
	rows, err := db.r.QueryContext(ctx, `-- name: list_conversations
SELECT `+conversationColumns+` FROM conversations
WHERE owner_key = ?
ORDER BY updated_at DESC, id DESC
LIMIT ?`, ownerKey, store.NormalizeLimit(limit))
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

// AppendMessage implements store.Conversations: ErrNotFound if the conversation does
// not exist. updated_at never moves backwards. It is written by the
// conversation writer (groupcommit.go), with other turns' writes.
func (db *DB) AppendMessage(ctx context.Context, m store.Message) (store.Message, error) {
	if m.CreatedAt.IsZero() {
		m.CreatedAt = time.Now().UTC()
	}
	if err := db.writeConv(ctx, convOp{msg: &m}); err != nil {
		return store.Message{}, err
	}
	m.CreatedAt = m.CreatedAt.UTC()
	return m, nil
}

// ListMessages implements store.Conversations: the last limit messages (at most
// store.MaxLimit), oldest first.
func (db *DB) ListMessages(ctx context.Context, conversationID string, limit int) ([]store.Message, error) {
	op := "list messages of conversation " + conversationID
	rows, err := db.r.QueryContext(ctx, `-- name: list_messages
SELECT id, conversation_id, role, text, created_at FROM messages
WHERE conversation_id = ?
ORDER BY id DESC
LIMIT ?`, conversationID, store.NormalizeMessageLimit(limit))
	if err != nil {
		return nil, dbErr(op, err)
	}
	defer rows.Close()
	out := []store.Message{}
	for rows.Next() {
		var (
			m       store.Message
			created sql.NullInt64
		)
		if err := rows.Scan(&m.ID, &m.ConversationID, &m.Role, &m.Text, &created); err != nil {
			return nil, dbErr(op, err)
		}
		m.CreatedAt = fromNanos(created)
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
	err := db.r.QueryRowContext(ctx, `-- name: message_tail
SELECT count(*), coalesce(max(id), 0) FROM messages WHERE conversation_id = ? AND id >= ?`, conversationID, fromID).Scan(&n, &last)
	if err != nil {
		return 0, 0, dbErr("read the tail of conversation "+conversationID, err)
	}
	return n, last, nil
}

// RenameConversation implements store.Conversations.
func (db *DB) RenameConversation(ctx context.Context, id, title string) (store.Conversation, error) {
	c, err := scanConversation(db.w.QueryRowContext(ctx, `-- name: rename_conversation
UPDATE conversations SET title = ? WHERE id = ?
RETURNING `+conversationColumns, title, id))
	if err != nil {
		return store.Conversation{}, dbErr("rename conversation "+id, err)
	}
	return c, nil
}

// DeleteConversation implements store.Conversations: its messages go with
// it (ON DELETE CASCADE).
func (db *DB) DeleteConversation(ctx context.Context, id string) error {
	op := "delete conversation " + id
	res, err := db.w.ExecContext(ctx, `-- name: delete_conversation
DELETE FROM conversations WHERE id = ?`, id)
	if err != nil {
		return dbErr(op, err)
	}
	if n, err := rowsAffected(res, op); err != nil {
		return err
	} else if n == 0 {
		return fmt.Errorf("sqlite: %s: %w", op, store.ErrNotFound)
	}
	return nil
}

// DeleteMessagesFrom implements store.Conversations.
func (db *DB) DeleteMessagesFrom(ctx context.Context, conversationID string, fromID int64) error {
	_, err := db.w.ExecContext(ctx, `-- name: delete_messages_from
DELETE FROM messages WHERE conversation_id = ? AND id >= ?`, conversationID, fromID)
	return dbErr("delete messages of conversation "+conversationID, err)
}
