package chat_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/chat"
	"github.com/agentsite/agentsite/store/sqlite/sqlitetest"
)

// TestTurnReplaceLast: a retry sends the last message again in place of
// its failed exchange; an edit replaces it with new text; the history the
// backend sees leaves the replaced exchange out.
func TestTurnReplaceLast(t *testing.T) {
	n := newNode(t, sqlitetest.Open(t))
	id := n.register(t, "", "redo").Record.ID
	owner := chat.AnonOwner("a")
	res, _ := n.turn(t, owner, chat.Request{AgentID: id, Text: "first"})
	conv := res.Conversation.ID
	n.local.fn = func(context.Context, func(string) error) (string, error) { return "", agent.ErrBackendUnavailable }
	if _, err := n.Chat.Turn(t.Context(), owner, chat.Request{AgentID: id, ConversationID: conv, Text: "second"}, discard); err == nil {
		t.Fatal("the failing turn did not fail")
	}
	n.local.fn = nil
	n.turn(t, owner, chat.Request{AgentID: id, ConversationID: conv, ReplaceLast: true})
	wantMessages(t, n.Store, conv, "user: first", "agent: Hello", "user: second", "agent: Hello")
	calls := n.local.calls()
	if last := calls[len(calls)-1]; last.Text != "second" || len(last.History) != 2 {
		t.Errorf("retried turn = %q with %d history messages, want second with 2", last.Text, len(last.History))
	}

	n.turn(t, owner, chat.Request{AgentID: id, ConversationID: conv, Text: "second, edited", ReplaceLast: true})
	wantMessages(t, n.Store, conv, "user: first", "agent: Hello", "user: second, edited", "agent: Hello")

	if _, err := n.Chat.Turn(t.Context(), chat.AnonOwner("b"), chat.Request{AgentID: id, ConversationID: conv, ReplaceLast: true}, discard); !errors.Is(err, chat.ErrNoConversation) {
		t.Errorf("retry in someone else's conversation: %v", err)
	}
	if _, err := n.Chat.Turn(t.Context(), owner, chat.Request{AgentID: id, ReplaceLast: true}, discard); !errors.Is(err, chat.ErrNothingToRetry) {
		t.Errorf("retry without a conversation: %v", err)
	}
}

// TestRenameDelete: only the owner renames or deletes; titles are
// checked.
func TestRenameDelete(t *testing.T) {
	n := newNode(t, sqlitetest.Open(t))
	id := n.register(t, "", "names").Record.ID
	owner := chat.AnonOwner("a")
	res, _ := n.turn(t, owner, chat.Request{AgentID: id, Text: "hello"})
	conv := res.Conversation.ID
	if _, err := n.Chat.Rename(t.Context(), chat.AnonOwner("b"), id, conv, "mine"); !errors.Is(err, chat.ErrNoConversation) {
		t.Errorf("rename by another owner: %v", err)
	}
	for _, bad := range []string{"", "   ", string(make([]rune, chat.MaxTitleRunes+1))} {
		if _, err := n.Chat.Rename(t.Context(), owner, id, conv, bad); !errors.Is(err, chat.ErrBadTitle) {
			t.Errorf("rename to %q: %v, want ErrBadTitle", bad, err)
		}
	}
	c, err := n.Chat.Rename(t.Context(), owner, id, conv, "  Trip   plans ")
	if err != nil || c.Title != "Trip plans" {
		t.Errorf("rename = %+v, %v", c, err)
	}
	if err := n.Chat.Delete(t.Context(), chat.AnonOwner("b"), id, conv); !errors.Is(err, chat.ErrNoConversation) {
		t.Errorf("delete by another owner: %v", err)
	}
	if err := n.Chat.Delete(t.Context(), owner, id, conv); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Chat.Conversation(t.Context(), owner, id, conv); !errors.Is(err, chat.ErrNoConversation) {
		t.Errorf("conversation after delete: %v", err)
	}
}
