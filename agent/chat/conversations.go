package chat

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

// MaxTitleRunes bounds a conversation title a person chooses.
const MaxTitleRunes = 100

// ErrBadTitle refuses an empty or overlong conversation title.
var ErrBadTitle = agent.NewError(agent.KindInvalid, agent.CodeInvalidInput,
	fmt.Sprintf("Give the conversation a title of 1 to %d characters.", MaxTitleRunes)).
	WithFields(map[string]string{"title": fmt.Sprintf("1 to %d characters", MaxTitleRunes)})

// Rename sets the title of owner's conversation id with agentID. Someone
// else's conversation looks exactly like a missing one.
func (c *Chat) Rename(ctx context.Context, owner Owner, agentID, id, title string) (store.Conversation, error) {
	title = strings.Join(strings.Fields(title), " ")
	if title == "" || !utf8.ValidString(title) || utf8.RuneCountInString(title) > MaxTitleRunes {
		return store.Conversation{}, ErrBadTitle
	}
	conv, err := c.Conversation(ctx, owner, agentID, id)
	if err != nil {
		return store.Conversation{}, err
	}
	out, err := c.Store.RenameConversation(ctx, conv.ID, title)
	if err != nil {
		return store.Conversation{}, fmt.Errorf("rename conversation: %w", err)
	}
	return out, nil
}

// Delete removes owner's conversation id with agentID and its messages.
// A reply still on its way in it is the caller's to stop first
// (Live.Stop).
func (c *Chat) Delete(ctx context.Context, owner Owner, agentID, id string) error {
	conv, err := c.Conversation(ctx, owner, agentID, id)
	if err != nil {
		return err
	}
	if err := c.Store.DeleteConversation(ctx, conv.ID); err != nil {
		return fmt.Errorf("delete conversation: %w", err)
	}
	return nil
}
