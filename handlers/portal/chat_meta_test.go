package portal_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/agentsite/agentsite/agent"
	. "github.com/agentsite/agentsite/handlers/handlertest"
	"github.com/agentsite/agentsite/store"
)

// TestChatMessageTimesAndEdit: every stored message says when it was
// sent (a <time> with the full date in its tooltip); the person's Edit
// is a labelled pencil under the bubble, not a chip inside it; Stop says
// that Escape does it too; the live templates carry an empty time for
// chat.js to stamp.
func TestChatMessageTimesAndEdit(t *testing.T) {
	e := NewChat(t)
	l := e.SeedAgent("", SimpleInput("echo-bot", "Echo Bot", "demo"))
	e.Signup("dana", "password-dana-1")
	u, err := e.Store.GetUserByHandle(t.Context(), "dana")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 6, 14, 5, 0, 0, time.UTC)
	if _, err := e.Store.CreateConversation(t.Context(), store.Conversation{ID: "ctime", AgentID: l.Record.ID, OwnerKey: "user:" + strconv.FormatInt(u.ID, 10),
		AgentOwner: l.Record.Owner, AgentPublisher: l.Record.Publisher, Title: "t", CreatedAt: at, UpdatedAt: at}); err != nil {
		t.Fatal(err)
	}
	for i, role := range []string{agent.RoleUser, agent.RoleAgent} {
		if _, err := e.Store.AppendMessage(t.Context(), store.Message{ConversationID: "ctime", Role: role, Text: "hi", CreatedAt: at.Add(time.Duration(i) * time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	doc := e.Page("/chat/"+l.Record.ID+"?c=ctime", http.StatusOK)
	msgs := doc.Find(`[data-testid="messages"] > [data-testid="message"]`)
	if msgs.Length() != 2 {
		t.Fatalf("%d messages", msgs.Length())
	}
	for i, want := range []string{"14:05", "14:06"} {
		tm := msgs.Eq(i).Find(`time[data-testid="message-time"]`)
		if Text(tm) != want || tm.AttrOr("datetime", "") != at.Add(time.Duration(i)*time.Minute).Format(time.RFC3339) || tm.AttrOr("title", "") != "2026-12-06 "+want+":00 UTC" {
			t.Errorf("message %d time %q datetime %q title %q", i, Text(tm), tm.AttrOr("datetime", ""), tm.AttrOr("title", ""))
		}
	}
	user := msgs.First()
	edit := user.Find(`[data-testid="message-edit"]`)
	if edit.Length() != 1 || user.Find(`.msg-bubble [data-testid="message-edit"]`).Length() != 0 {
		t.Errorf("Edit: %d buttons, %d inside the bubble; want one, under it", edit.Length(), user.Find(`.msg-bubble [data-testid="message-edit"]`).Length())
	}
	if Text(edit) != "Edit message" || edit.Find("svg").Length() != 1 || edit.AttrOr("title", "") == "" {
		t.Errorf("Edit is %q (svg %d, title %q), want a labelled pencil", Text(edit), edit.Find("svg").Length(), edit.AttrOr("title", ""))
	}
	if got := MustTestid(t, doc, "composer-stop").AttrOr("aria-keyshortcuts", ""); got != "Escape" {
		t.Errorf("Stop's keyshortcut = %q", got)
	}
	tpl, _ := doc.Find(`template[data-template="user"]`).Html()
	if tpl == "" || doc.Find(`template[data-template="user"]`).Length() != 1 {
		t.Fatal("no user template")
	}
	if tmpl, err := goquery.NewDocumentFromReader(strings.NewReader(tpl)); err != nil || tmpl.Find(`time[data-testid="message-time"][hidden]`).Length() != 1 {
		t.Errorf("the live user template has no empty time to stamp: %s", tpl)
	}
}
