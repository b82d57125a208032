package postgres

import (
	"context"
	"errors"
	"fmt"
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

// errConvRetryAlone rolls a batch back: one of its writes failed, which
// ends a Postgres transaction, so each is written again alone.
var errConvRetryAlone = errors.New("postgres: a write of the batch failed")

// convRetryTimeout bounds a write retried alone when the store has no
// deadline of its own.
const convRetryTimeout = 10 * time.Second

// commitConvBatch writes the batch in one transaction. An append to a
// missing conversation fails alone (its statement wrote nothing and
// raised nothing); any other failure rolls the batch back and writes
// each op in a transaction of its own.
func (db *DB) commitConvBatch(live []*store.Pending[convOp]) {
	ctx := context.Background()
	err := db.InTransaction(ctx, func(ctx context.Context, tx pgx.Tx) error {
		for _, p := range live {
			clean, err := writeConvOp(ctx, tx, p.Op)
			if err != nil && !clean {
				return fmt.Errorf("%w: %w", errConvRetryAlone, err)
			}
			p.Err = err
		}
		return nil
	})
	if err == nil {
		return
	}
	if !errors.Is(err, errConvRetryAlone) {
		// BEGIN or COMMIT failed: nothing of the batch was written.
		for _, p := range live {
			p.Err = err
		}
		return
	}
	for _, p := range live {
		ctx, cancel := context.WithTimeout(ctx, convRetryTimeout)
		p.Err = db.InTransaction(ctx, func(ctx context.Context, tx pgx.Tx) error {
			_, err := writeConvOp(ctx, tx, p.Op)
			return err
		})
		cancel()
	}
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
