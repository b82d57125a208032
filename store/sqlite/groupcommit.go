package sqlite

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentsite/agentsite/store"
)

// Group commit of conversation writes (docs/architecture.md §6,
// "Conversation writes"). Every chat turn writes its person's message and its reply, and
// a new conversation besides; as a transaction each, those commits were
// most of a turn's store CPU (BENCHMARKS.md, "Chat turns across nodes
// cost what local ones do"). One goroutine, the conversation writer, takes
// the writes of concurrent turns as they queue and runs them in one write
// transaction: a writer waits for the commit of its batch, so nothing is
// acknowledged before it is in the database, as before.

// maxConvBatch bounds the writes of one group commit.
const maxConvBatch = 256

// convOp is one conversation write waiting for the writer: a new
// conversation (conv, with its first message when msg is set too) or a
// message appended (msg only).
type convOp struct {
	conv *store.Conversation
	msg  *store.Message
}

// writeConv has the conversation writer write op, with the other turns'
// writes queued meanwhile, and waits for its batch's commit
// (store.GroupWriter).
func (db *DB) writeConv(ctx context.Context, op convOp) error {
	if err := db.space.readOnly; err != nil {
		return err
	}
	return db.conv.Do(ctx, op)
}

// commitConvBatch writes the ops of batch their callers have not given up
// on, in one transaction (store.CommitBatch: a write refused cleanly, an
// append to a missing conversation, fails alone; any other failure writes
// each op again in a transaction of its own).
func (db *DB) commitConvBatch(live []*store.Pending[convOp]) {
	store.CommitBatch(live, func(ctx context.Context, fn func(context.Context, execer) error) error {
		return db.inTx(ctx, fn, createConversationSQL, bumpConversationSQL, insertMessageSQL)
	}, writeConvOp)
}

// writeConvOp runs op's statements in tx and fills in what the database
// gave it (timestamps, the message id). clean reports, with an error,
// that op wrote nothing and the transaction goes on unharmed: its first
// statement was refused (a conversation that exists already, an append
// to one that does not).
func writeConvOp(ctx context.Context, tx execer, op convOp) (clean bool, err error) {
	m := op.msg
	if op.conv != nil {
		c := op.conv
		what := "create conversation " + c.ID
		updated := c.UpdatedAt
		if m != nil && m.CreatedAt.After(updated) {
			updated = m.CreatedAt
		}
		out, err := scanConversation(tx.QueryRowContext(ctx, createConversationSQL,
			c.ID, c.AgentID, c.OwnerKey, c.AgentOwner, c.AgentPublisher, c.Title, nanos(c.CreatedAt), nanos(updated)))
		if err != nil {
			err = dbErr(what, err)
			return errors.Is(err, store.ErrConflict), err
		}
		*c = out
	} else {
		what := "append message to conversation " + m.ConversationID
		res, err := tx.ExecContext(ctx, bumpConversationSQL, nanos(m.CreatedAt), m.ConversationID)
		if err != nil {
			return false, dbErr(what, err)
		}
		if n, err := rowsAffected(res, what); err != nil {
			return false, err
		} else if n == 0 {
			return true, fmt.Errorf("sqlite: %s: %w", what, store.ErrNotFound)
		}
	}
	if m == nil {
		return false, nil
	}
	err = tx.QueryRowContext(ctx, insertMessageSQL, m.ConversationID, m.Role, m.Text, nanos(m.CreatedAt)).Scan(&m.ID)
	return false, dbErr("append message to conversation "+m.ConversationID, err)
}
