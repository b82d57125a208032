package chat

import (
	"context"
	"errors"

	"github.com/agentsite/agentsite/store"
)

// Open returns the conversation owner's next turn with agent agentID goes
// to: conversation id when it is owner's with that agent, else a new one
// (an unknown or foreign id is no error: the caller learns the new id).
// It is for protocols that must name the conversation before the turn
// runs, such as A2A, whose task carries its contextId from the first
// event; Turn then continues the conversation by its id. The message and
// the agent are checked as Turn checks them, so a refused message leaves
// no empty conversation behind.
func (c *Chat) Open(ctx context.Context, owner Owner, agentID, id, text string) (store.Conversation, error) {
	l, text, err := c.admit(ctx, agentID, text)
	if err != nil {
		return store.Conversation{}, err
	}
	if id != "" {
		conv, err := c.conversationFor(ctx, owner, l, id, text)
		if !errors.Is(err, ErrNoConversation) {
			return conv, err
		}
	}
	return c.conversationFor(ctx, owner, l, "", text)
}
