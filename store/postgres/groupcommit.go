package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentsite/agentsite/store"
)

// Group commit of conversation writes (docs/architecture.md §6,
// "Conversation writes"), as on SQLite: the conversation writer
// (store.GroupWriter) runs the messages appended and the conversations
// started by concurrent turns in one transaction, so they share one
// commit (one WAL flush on the server); each caller waits for it.

// maxConvBatch bounds the writes of one group commit.
const maxConvBatch = 256

// convOp is one conversation write: a new conversation with its first
// message (conv and msg), or a message appended (msg only).
type convOp struct {
	conv *store.Conversation
	msg  *store.Message
}

// commitConvBatch writes the batch in one transaction (store.CommitBatch:
// an append to a missing conversation fails alone, any other failure
// writes each op again in a transaction of its own).
func (db *DB) commitConvBatch(live []*store.Pending[convOp]) {
	store.CommitBatch(live, db.InTransaction, writeConvOp)
}

// writeConvOp runs op's statement in tx and fills in what the database
// gave it. clean reports, with an error, that the statement wrote nothing
// and the transaction goes on unharmed (an append to a missing
// conversation).
func writeConvOp(ctx context.Context, tx pgx.Tx, op convOp) (clean bool, err error) {
	m := op.msg
	var created time.Time
	if c := op.conv; c != nil {
		updated := c.UpdatedAt
		if m.CreatedAt.After(updated) {
			updated = m.CreatedAt
		}
		var out store.Conversation
		err := tx.QueryRow(ctx, startConversationSQL,
			c.ID, c.AgentID, c.OwnerKey, c.AgentOwner, c.AgentPublisher, c.Title, c.CreatedAt, updated,
			m.Role, m.Text, m.CreatedAt).Scan(&out.ID, &out.AgentID, &out.OwnerKey, &out.AgentOwner, &out.AgentPublisher, &out.Title,
			&out.CreatedAt, &out.UpdatedAt, &m.ID, &created)
		if err != nil {
			return false, dbErr("create conversation "+c.ID, err)
		}
		out.CreatedAt, out.UpdatedAt = out.CreatedAt.UTC(), out.UpdatedAt.UTC()
		*c = out
		m.CreatedAt = created.UTC()
		return false, nil
	}
	err = tx.QueryRow(ctx, appendMessageSQL, m.ConversationID, m.Role, m.Text, m.CreatedAt).Scan(&m.ID, &created)
	if errors.Is(err, pgx.ErrNoRows) {
		return true, dbErr("append message to conversation "+m.ConversationID, err)
	}
	if err != nil {
		return false, dbErr("append message to conversation "+m.ConversationID, err)
	}
	m.CreatedAt = created.UTC()
	return false, nil
}
