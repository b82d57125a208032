package chat_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/chat"
	"github.com/agentsite/agentsite/agent/registry/registrytest"
	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/store/sqlite/sqlitetest"
)

func TestHistory(t *testing.T) {
	registrytest.Engines(t, func(t *testing.T, st store.Store) {
		n := newNode(t, st)
		l := n.register(t, "alice", "helper")
		owner := chat.UserOwner(7)
		res, _ := n.turn(t, owner, chat.Request{AgentID: l.Record.ID, Text: "hi"})
		id := res.Conversation.ID
		for i := range 3 {
			if _, err := st.AppendMessage(t.Context(), store.Message{ConversationID: id, Role: agent.RoleAgent, Text: fmt.Sprintf("m%d", i), CreatedAt: n.Clock.Now()}); err != nil {
				t.Fatal(err)
			}
		}

		conv, ms, err := n.Chat.History(t.Context(), owner, id, 0)
		if err != nil || conv.ID != id || conv.AgentID != l.Record.ID || conv.Title != "hi" {
			t.Fatalf("History = %+v, %v; want the owner's conversation", conv, err)
		}
		if got := texts(ms); got != "user: hi|agent: Hello|agent: m0|agent: m1|agent: m2" {
			t.Errorf("messages = %s, want all five, oldest first", got)
		}
		if _, ms, _ = n.Chat.History(t.Context(), owner, id, 2); texts(ms) != "agent: m1|agent: m2" {
			t.Errorf("limit 2: messages = %s, want the newest two", texts(ms))
		}
	})
}

func texts(ms []store.Message) string {
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		out = append(out, m.Role+": "+m.Text)
	}
	return strings.Join(out, "|")
}

// History reads by id alone, so the owner is all that guards it:
// anyone else's conversation, with whichever agent, is missing.
func TestHistoryIsTheOwners(t *testing.T) {
	st := sqlitetest.Open(t)
	n := newNode(t, st)
	l := n.register(t, "alice", "helper")
	res, _ := n.turn(t, chat.UserOwner(1), chat.Request{AgentID: l.Record.ID, Text: "private"})
	anon, _ := n.turn(t, chat.APIAnonymous, chat.Request{AgentID: l.Record.ID, Text: "anyone with the id"})
	conv := res.Conversation.ID

	if _, _, err := n.Chat.History(t.Context(), chat.APIAnonymous, anon.Conversation.ID, 0); err != nil {
		t.Errorf("anonymous API conversation by its id: %v", err)
	}
	cases := []struct {
		name  string
		owner chat.Owner
		id    string
	}{
		{"another user", chat.UserOwner(2), conv},
		{"anonymous API", chat.APIAnonymous, conv},
		{"the operator", chat.OperatorOwner, conv},
		{"no owner", "", conv},
		{"a user, an anonymous one", chat.UserOwner(1), anon.Conversation.ID},
		{"unknown id", chat.UserOwner(1), "cnosuchconversation"},
		{"overlong id", chat.UserOwner(1), conv + strings.Repeat("x", chat.MaxConversationIDLen)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, ms, err := n.Chat.History(t.Context(), tc.owner, tc.id, 0)
			if !errors.Is(err, chat.ErrNoConversation) || c.ID != "" || ms != nil {
				t.Errorf("History = %+v, %d messages, %v; want ErrNoConversation and nothing", c, len(ms), err)
			}
		})
	}
}
