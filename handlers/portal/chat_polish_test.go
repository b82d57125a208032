package portal_test

import (
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/chat"
	. "github.com/agentsite/agentsite/handlers/handlertest"
	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/web"
)

// TestChatPagePolish: every finished reply has Copy and the last one
// Regenerate (a form, so it works without JavaScript); a reply's lines
// stay lines; a stop the person chose is a calm note with Try again; the
// message box has the focus; the side list is a drawer the header opens.
func TestChatPagePolish(t *testing.T) {
	e := NewChat(t)
	l := e.SeedAgent("", SimpleInput("echo-bot", "Echo Bot", "demo"))
	echo := l.Record.ID
	e.Signup("dana", "password-dana-1")
	u, err := e.Store.GetUserByHandle(t.Context(), "dana")
	if err != nil {
		t.Fatal(err)
	}
	owner := "user:" + strconv.FormatInt(u.ID, 10)
	ctx := t.Context()
	at := time.Now().Add(-time.Hour).UTC()
	seed := func(id string, msgs ...[2]string) {
		t.Helper()
		title := id
		if id == "cdone" {
			title = "**the** `sea`" // stored before titles were made plain
		}
		if _, err := e.Store.CreateConversation(ctx, store.Conversation{ID: id, AgentID: echo, OwnerKey: owner,
			AgentOwner: l.Record.Owner, AgentPublisher: l.Record.Publisher, Title: title, CreatedAt: at, UpdatedAt: at}); err != nil {
			t.Fatal(err)
		}
		for i, m := range msgs {
			if _, err := e.Store.AppendMessage(ctx, store.Message{ConversationID: id, Role: m[0], Text: m[1], CreatedAt: at.Add(time.Duration(i) * time.Second)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	haiku := "the sea in the dusk —\na quiet answer settles\nlike snow on the pond"
	seed("cdone", [2]string{agent.RoleUser, "hi"}, [2]string{agent.RoleAgent, "hi"}, [2]string{agent.RoleUser, "the sea"}, [2]string{agent.RoleAgent, haiku})
	seed("cstop", [2]string{agent.RoleUser, "tell me"}, [2]string{agent.RoleError, chat.ErrStopped.Message})

	doc := e.Page("/chat/"+echo+"?c=cdone", http.StatusOK)
	replies := doc.Find(`[data-testid="messages"] > [data-testid="message"][data-role="agent"]`)
	if replies.Length() != 2 {
		t.Fatalf("%d replies", replies.Length())
	}
	if n := replies.Find(`[data-testid="message-copy"]`).Length(); n != 2 {
		t.Errorf("%d Copy buttons, want one per finished reply", n)
	}
	if replies.First().Find(`[data-testid="regenerate-form"]`).Length() != 0 {
		t.Error("an earlier reply offers Regenerate (only the last exchange is answered anew)")
	}
	regen := replies.Last().Find(`form[data-testid="regenerate-form"]`)
	if regen.AttrOr("method", "") != "post" || regen.Find(`input[name="c"]`).AttrOr("value", "") != "cdone" ||
		regen.Find(`input[name="redo"]`).AttrOr("value", "") != "retry" || regen.Find(`[data-testid="message-regenerate"]`).Length() != 1 {
		t.Errorf("the last reply's Regenerate form is missing or wrong")
	}
	if n := replies.Last().Find(`[data-testid="message-markdown"] p br`).Length(); n != 2 {
		t.Errorf("the haiku has %d line breaks, want 2", n)
	}
	if _, ok := MustTestid(t, doc, "composer-input").Attr("autofocus"); !ok {
		t.Error("the message box does not take the focus when the chat opens")
	}
	toggle := MustTestid(t, doc, "conversations-toggle")
	if toggle.AttrOr("aria-controls", "") != "chat-side" || toggle.AttrOr("aria-expanded", "") != "false" || doc.Find("#chat-side").Length() != 1 {
		t.Error("the drawer button does not control the side list")
	}
	if Text(MustTestid(t, doc, "chat-agent-status")) != "Online" {
		t.Errorf("header status word = %q", Text(MustTestid(t, doc, "chat-agent-status")))
	}

	if got := Text(doc.Find(`[data-testid="conversation"][data-conversation-id="cdone"] .conv-title`)); got != "the sea" {
		t.Errorf("side list title = %q, want the text without its Markdown", got)
	}

	// Regenerate without JavaScript: the last message answered again.
	resp := e.PostForm("/chat/"+echo, url.Values{"c": {"cdone"}, "redo": {"retry"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("regenerate: %d", resp.StatusCode)
	}
	doc = e.Page("/chat/"+echo+"?c=cdone", http.StatusOK)
	if got := ChatMessages(doc); len(got) != 4 || got[3] != [2]string{"agent", "the sea"} {
		t.Errorf("after Regenerate: %q", got)
	}

	doc = e.Page("/chat/"+echo+"?c=cstop", http.StatusOK)
	stop := doc.Find(`[data-testid="messages"] > [data-testid="message"]`).Last()
	if !stop.HasClass("msg-stopped") || Text(stop.Find(".msg-label")) != web.StoppedLabel || stop.Find(`[data-testid="message-retry"]`).Length() != 1 {
		h, _ := stop.Html()
		t.Errorf("a chosen stop is not the calm note with Try again: %s", h)
	}
	if stop.Find(`[data-testid="message-actions"]`).Length() != 0 {
		t.Error("a stopped reply offers Copy and Regenerate")
	}
}
