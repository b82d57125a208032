package chat

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentsite/agentsite/store"
)

// How many of a conversation's messages one History read returns: enough
// for a script to see a long exchange, few enough to stay one small answer.
const (
	DefaultHistory = 100
	MaxHistory     = 200
)

// History is conversation id of owner, whichever agent it is with, and its
// newest limit messages (0: DefaultHistory; at most MaxHistory), oldest
// first. It is for readers that know a conversation by its id alone (the
// message API). Someone else's conversation looks exactly like a missing
// one: the rule is owned's, as for Conversation. (The stores still cap a
// read at store.MaxLimit, 100: above that, limit needs their cap raised.)
func (c *Chat) History(ctx context.Context, owner Owner, id string, limit int) (store.Conversation, []store.Message, error) {
	conv, err := c.owned(ctx, owner, id)
	if err != nil {
		return store.Conversation{}, nil, err
	}
	switch {
	case limit <= 0:
		limit = DefaultHistory
	case limit > MaxHistory:
		limit = MaxHistory
	}
	ms, err := c.Store.ListMessages(ctx, conv.ID, limit)
	if err != nil {
		return store.Conversation{}, nil, fmt.Errorf("load messages: %w", err)
	}
	return conv, ms, nil
}

// owned loads conversation id if it is owner's: the one rule of who may
// read or continue a conversation. An empty owner is no one, and an id
// that cannot be ours is not looked up.
func (c *Chat) owned(ctx context.Context, owner Owner, id string) (store.Conversation, error) {
	if owner == "" || id == "" || len(id) > MaxConversationIDLen {
		return store.Conversation{}, ErrNoConversation
	}
	conv, err := c.Store.GetConversation(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return store.Conversation{}, ErrNoConversation
	case err != nil:
		return store.Conversation{}, err
	case conv.OwnerKey != string(owner):
		return store.Conversation{}, ErrNoConversation
	}
	return conv, nil
}
