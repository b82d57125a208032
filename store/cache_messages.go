package store

import (
	"container/list"
	"context"
	"slices"
	"sync"
	"sync/atomic"
)

// Conversations is next (the engine's conversations) with each recent
// conversation's newest messages kept in c's memory: a continued chat turn
// reads its history (the last 40 messages) before the agent answers, and
// reading them from SQLite was about 200 µs, a quarter of a turn's CPU,
// because every commit of the conversation writer empties the readers'
// page caches and each row is looked up on its own (docs/architecture.md
// §6, "The history from memory"; BENCHMARKS.md).
//
// What it holds is never trusted: every read checks it with MessageTail,
// one look at the index, which says how many messages the conversation
// has from the first one held on and the last one's id. Ids only grow and
// a conversation loses messages only from some message to its end
// (DeleteMessagesFrom) or all at once, so the same count and the same last
// id mean the same messages. A write that does not pass through here
// (another process, an account's deletion) costs a miss, never a wrong
// history. Writes through here keep it current: an appended message is
// added once its commit is done, a new conversation starts with its first
// message, deletions drop the conversation's entry.
//
// Bounds: reads of at most TailMessagesMax messages are served; the
// entries are bounded by an estimate of their bytes (TailsMaxBytes, the
// least recently read go first), and a conversation whose newest messages
// alone would take an eighth of it is not kept.
func (c *Cache) Conversations(next Conversations) Conversations {
	return cachedConversations{Conversations: next, t: &c.tails}
}

// TailStats is how many ListMessages calls the conversations'
// cache answered from memory (hits) and from the engine (misses).
func (c *Cache) TailStats() (hits, misses uint64) { return c.tails.hits.Load(), c.tails.misses.Load() }

const (
	// TailMessagesMax is the most messages of a conversation kept, and
	// the largest read served from memory (a chat turn reads 40; the chat
	// page's longer reads pass through).
	TailMessagesMax = MaxLimit
	// TailsMaxBytes bounds the estimated size of the messages kept.
	TailsMaxBytes = 8 << 20
)

// cachedConversations embeds next: every method it does not write out
// passes through, which is safe because what it holds is checked at each
// read (see Conversations).
type cachedConversations struct {
	Conversations
	t *messageTails
}

// ListMessages implements Conversations from memory when MessageTail says
// the messages held are still the conversation's newest ones.
func (cc cachedConversations) ListMessages(ctx context.Context, conversationID string, limit int) ([]Message, error) {
	if limit <= 0 || limit > TailMessagesMax {
		return cc.Conversations.ListMessages(ctx, conversationID, limit)
	}
	if msgs, complete, ok := cc.t.get(conversationID); ok && (len(msgs) >= limit || complete) {
		// Only what the read returns is checked: the last limit held,
		// or all of them when the entry is the whole conversation.
		msgs = msgs[max(0, len(msgs)-limit):]
		from, last := int64(0), int64(0)
		if len(msgs) > 0 {
			from, last = msgs[0].ID, msgs[len(msgs)-1].ID
		}
		n, gotLast, err := cc.Conversations.MessageTail(ctx, conversationID, from)
		if err != nil {
			return nil, err
		}
		if n == len(msgs) && gotLast == last {
			cc.t.hits.Add(1)
			return slices.Clone(msgs), nil
		}
	}
	cc.t.misses.Add(1)
	ms, err := cc.Conversations.ListMessages(ctx, conversationID, limit)
	if err == nil {
		cc.t.put(conversationID, slices.Clone(ms), len(ms) < limit)
	}
	return ms, err
}

// AppendMessage implements Conversations and adds the message, once
// committed, to its conversation's entry.
func (cc cachedConversations) AppendMessage(ctx context.Context, m Message) (Message, error) {
	got, err := cc.Conversations.AppendMessage(ctx, m)
	if err == nil {
		cc.t.extend(got)
	}
	return got, err
}

// StartConversation implements Conversations: the new conversation's
// entry is its first message, or nothing.
func (cc cachedConversations) StartConversation(ctx context.Context, c Conversation, first *Message) (Conversation, *Message, error) {
	conv, m, err := cc.Conversations.StartConversation(ctx, c, first)
	if err == nil {
		var msgs []Message
		if m != nil {
			msgs = []Message{*m}
		}
		cc.t.put(conv.ID, msgs, true)
	}
	return conv, m, err
}

// DeleteMessagesFrom implements Conversations and drops the
// conversation's entry.
func (cc cachedConversations) DeleteMessagesFrom(ctx context.Context, conversationID string, fromID int64) error {
	defer cc.t.drop(conversationID)
	return cc.Conversations.DeleteMessagesFrom(ctx, conversationID, fromID)
}

// DeleteConversation implements Conversations and drops the
// conversation's entry.
func (cc cachedConversations) DeleteConversation(ctx context.Context, id string) error {
	defer cc.t.drop(id)
	return cc.Conversations.DeleteConversation(ctx, id)
}

// messageTails is the LRU of conversations' newest messages. A reader
// may hold an entry's slice after get: an extension appends past its end
// (or to a new array), and no element below an entry's length is written
// again. The zero value is empty and ready.
type messageTails struct {
	hits, misses atomic.Uint64

	mu    sync.Mutex
	byID  map[string]*list.Element
	order *list.List // of *tailEntry, most recently read first
	bytes int
}

type tailEntry struct {
	id string
	// msgs are every message of the conversation from msgs[0].ID on,
	// oldest first; complete says there is none before.
	msgs     []Message
	complete bool
	size     int
}

func messageSize(m Message) int { return 96 + len(m.ConversationID) + len(m.Role) + len(m.Text) }

func messagesSize(ms []Message) int {
	n := 0
	for _, m := range ms {
		n += messageSize(m)
	}
	return n
}

func (t *messageTails) get(id string) ([]Message, bool, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	el, ok := t.byID[id]
	if !ok {
		return nil, false, false
	}
	t.order.MoveToFront(el)
	e := el.Value.(*tailEntry)
	return e.msgs, e.complete, true
}

// put replaces conversation id's entry with msgs.
func (t *messageTails) put(id string, msgs []Message, complete bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.putLocked(id, msgs, complete)
}

func (t *messageTails) putLocked(id string, msgs []Message, complete bool) {
	if len(msgs) > TailMessagesMax {
		msgs, complete = msgs[len(msgs)-TailMessagesMax:], false
	}
	size := messagesSize(msgs) + 64 + len(id)
	t.removeLocked(id)
	if size > TailsMaxBytes/8 {
		return
	}
	if t.byID == nil {
		t.byID, t.order = map[string]*list.Element{}, list.New()
	}
	for t.bytes+size > TailsMaxBytes && t.order.Len() > 0 {
		t.removeLocked(t.order.Back().Value.(*tailEntry).id)
	}
	t.byID[id] = t.order.PushFront(&tailEntry{id: id, msgs: msgs, complete: complete, size: size})
	t.bytes += size
}

// extend adds m, just committed, to its conversation's entry if it is
// newer than all the entry holds; else the entry goes (a read refills
// it). A conversation without an entry stays without.
func (t *messageTails) extend(m Message) {
	t.mu.Lock()
	defer t.mu.Unlock()
	el, ok := t.byID[m.ConversationID]
	if !ok {
		return
	}
	e := el.Value.(*tailEntry)
	if n := len(e.msgs); n > 0 && e.msgs[n-1].ID >= m.ID {
		t.removeLocked(m.ConversationID)
		return
	}
	msgs, size := append(e.msgs, m), e.size+messageSize(m)
	for len(msgs) > TailMessagesMax {
		size -= messageSize(msgs[0])
		msgs, e.complete = msgs[1:], false
	}
	if size > TailsMaxBytes/8 {
		t.removeLocked(m.ConversationID)
		return
	}
	t.bytes += size - e.size
	e.msgs, e.size = msgs, size
	t.order.MoveToFront(el)
	for t.bytes > TailsMaxBytes && t.order.Back() != el {
		t.removeLocked(t.order.Back().Value.(*tailEntry).id)
	}
}

func (t *messageTails) drop(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.removeLocked(id)
}

func (t *messageTails) removeLocked(id string) {
	el, ok := t.byID[id]
	if !ok {
		return
	}
	t.order.Remove(el)
	delete(t.byID, id)
	t.bytes -= el.Value.(*tailEntry).size
}
