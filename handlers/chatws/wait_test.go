package chatws_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/handlers/chatws"
	. "github.com/agentsite/agentsite/handlers/handlertest"
)

// queuedAnswerer waits in a pretend model queue (two ahead, then one, then
// its turn) before it answers, and keeps the caller the turn came as.
type queuedAnswerer struct {
	mu     sync.Mutex
	caller string
}

func (q *queuedAnswerer) Answer(ctx context.Context, t agent.Turn, emit func(string) error) (string, error) {
	q.mu.Lock()
	q.caller = agent.CallerOf(ctx)
	q.mu.Unlock()
	for _, n := range []int{2, 1, -1} {
		if t.OnWait != nil {
			t.OnWait(n)
		}
	}
	return "hi", emit("hi")
}

// TestChatWebSocketShowsModelQueue: a turn waiting for its model sends
// waiting frames with its place (then -1) before the reply, and it waits
// as the person chatting.
func TestChatWebSocketShowsModelQueue(t *testing.T) {
	e := NewChat(t)
	id, v := onChatPage(t, e)
	q := &queuedAnswerer{}
	e.Server.Chat.Local = q
	c := v.MustDial()
	if err := c.WriteJSON(chatws.In{Type: chatws.TypeMessage, AgentID: id, Text: "hello"}); err != nil {
		t.Fatal(err)
	}
	var ahead []int
	for f := ReadFrame(t, c); f.Type != chatws.TypeDone; f = ReadFrame(t, c) {
		switch f.Type {
		case chatws.TypeError:
			t.Fatalf("error frame %+v", f)
		case chatws.TypeWaiting:
			if f.Ahead == nil || f.ConversationID == "" {
				t.Fatalf("waiting frame %+v", f)
			}
			ahead = append(ahead, *f.Ahead)
		case chatws.TypeChunk:
			if !slices.Equal(ahead, []int{2, 1, -1}) {
				t.Fatalf("before the reply: waiting %v, want [2 1 -1]", ahead)
			}
		}
	}
	if !slices.Equal(ahead, []int{2, 1, -1}) {
		t.Fatalf("waiting frames %v, want [2 1 -1]", ahead)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if !strings.HasPrefix(q.caller, "anon:") {
		t.Fatalf("the turn waited as %q, want the anonymous visitor (anon:…)", q.caller)
	}
}
