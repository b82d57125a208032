package sqlite

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

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
	// state is opQueued until the writer takes the op (opTaken) or its
	// caller gives up on it first (opAbandoned).
	state atomic.Int32
	err   error
	done  chan struct{}
}

const (
	opQueued int32 = iota
	opTaken
	opAbandoned
)

// errConvWriterClosed fails the writes queued when the store closes.
var errConvWriterClosed = fmt.Errorf("sqlite: the store is closed: %w", store.ErrUnavailable)

// convWriter is the conversation writer of a DB, started on its first
// write.
type convWriter struct {
	once sync.Once
	ops  chan *convOp
	quit chan struct{}
	// closed is set (under mu) when Close has begun: no op is queued
	// after it.
	mu     sync.RWMutex
	closed bool
	wg     sync.WaitGroup
}

// writeConv queues op for the conversation writer and waits for its
// batch's commit. A caller whose ctx ends before the writer took its op
// gets ctx's error and the op is not written; once taken, the op's result
// is its batch's, however long the commit takes (under the store
// deadline), so an error never hides a write that was made.
func (db *DB) writeConv(ctx context.Context, op *convOp) error {
	if err := db.space.readOnly; err != nil {
		return err
	}
	cw := &db.conv
	cw.once.Do(func() {
		cw.ops = make(chan *convOp, maxConvBatch)
		cw.quit = make(chan struct{})
		cw.wg.Add(1)
		go db.runConvWriter()
	})
	op.done = make(chan struct{})
	cw.mu.RLock()
	if cw.closed {
		cw.mu.RUnlock()
		return errConvWriterClosed
	}
	select {
	case cw.ops <- op:
		cw.mu.RUnlock()
	case <-ctx.Done():
		cw.mu.RUnlock()
		return ctx.Err()
	}
	select {
	case <-op.done:
		return op.err
	case <-ctx.Done():
		if op.state.CompareAndSwap(opQueued, opAbandoned) {
			return ctx.Err()
		}
		<-op.done
		return op.err
	}
}

// closeConvWriter stops the writer after the writes it has taken; those
// still queued fail.
func (db *DB) closeConvWriter() {
	cw := &db.conv
	cw.mu.Lock()
	started := cw.ops != nil && !cw.closed
	cw.closed = true
	cw.mu.Unlock()
	if !started {
		return
	}
	close(cw.quit)
	cw.wg.Wait()
}

// runConvWriter is the conversation writer: it takes the first op queued
// and every other one queued meanwhile (up to maxConvBatch), writes them
// in one transaction, and answers each.
func (db *DB) runConvWriter() {
	cw := &db.conv
	defer cw.wg.Done()
	batch := make([]*convOp, 0, maxConvBatch)
	for {
		select {
		case <-cw.quit:
			for {
				select {
				case op := <-cw.ops:
					op.err = errConvWriterClosed
					close(op.done)
				default:
					return
				}
			}
		case op := <-cw.ops:
			batch = append(batch[:0], op)
		more:
			for len(batch) < maxConvBatch {
				select {
				case op := <-cw.ops:
					batch = append(batch, op)
				default:
					break more
				}
			}
			db.commitConvBatch(batch)
		}
	}
}

// errConvRetryAlone rolls a batch back: one of its writes failed in a way
// that may have left part of it written, so each is written again alone.
var errConvRetryAlone = errors.New("sqlite: a write of the batch failed")

// commitConvBatch writes the ops of batch their callers have not given up
// on, in one transaction. A write refused cleanly (an append to a missing
// conversation: nothing was written) fails alone; any other failure rolls
// the batch back and writes each op in a transaction of its own, so that
// one bad write does not fail the others.
func (db *DB) commitConvBatch(batch []*convOp) {
	live := batch[:0]
	for _, op := range batch {
		if op.state.CompareAndSwap(opQueued, opTaken) {
			live = append(live, op)
		}
	}
	if len(live) == 0 {
		return
	}
	defer func() {
		for _, op := range live {
			close(op.done)
		}
	}()
	ctx := context.Background()
	err := db.inTx(ctx, func(ctx context.Context, tx execer) error {
		for _, op := range live {
			clean, err := writeConvOp(ctx, tx, op)
			if err != nil && !clean {
				return fmt.Errorf("%w: %w", errConvRetryAlone, err)
			}
			op.err = err
		}
		return nil
	}, createConversationSQL, bumpConversationSQL, insertMessageSQL)
	if err == nil {
		return
	}
	if !errors.Is(err, errConvRetryAlone) {
		// BEGIN or COMMIT failed: nothing of the batch was written.
		for _, op := range live {
			op.err = err
		}
		return
	}
	for _, op := range live {
		ctx, cancel := context.WithTimeout(ctx, convRetryTimeout)
		op.err = db.inTx(ctx, func(ctx context.Context, tx execer) error {
			_, err := writeConvOp(ctx, tx, op)
			return err
		}, createConversationSQL, bumpConversationSQL, insertMessageSQL)
		cancel()
	}
}

// convRetryTimeout bounds a write retried alone when the store has no
// deadline of its own.
const convRetryTimeout = 10 * time.Second

// writeConvOp runs op's statements in tx and fills in what the database
// gave it (timestamps, the message id). clean reports, with an error,
// that op wrote nothing and the transaction goes on unharmed: its first
// statement was refused (a conversation that exists already, an append
// to one that does not).
func writeConvOp(ctx context.Context, tx execer, op *convOp) (clean bool, err error) {
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
